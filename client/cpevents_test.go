package client_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/corral-sh/corral/api/cpapi"
	"github.com/corral-sh/corral/client"
	"github.com/corral-sh/corral/internal/controlplane/controlplanetest"
)

// cutter dials TCP and cuts the first connection once limit bytes of the
// response body have been read from it, the way a network drop would,
// mid-event.
type cutter struct {
	limit int
	mu    sync.Mutex
	dials int
	cuts  int
}

func (c *cutter) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.dials++
	if c.dials > 1 {
		return conn, nil
	}
	return &cutConn{Conn: conn, left: c.limit, onCut: func() { c.mu.Lock(); c.cuts++; c.mu.Unlock() }}, nil
}

func (c *cutter) counts() (dials, cuts int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.dials, c.cuts
}

// cutConn counts the bytes after the response headers and fails every
// read once left of them have passed.
type cutConn struct {
	net.Conn
	left   int
	seen   []byte // the headers read so far, until their end
	inBody bool
	once   sync.Once
	onCut  func()
}

func (c *cutConn) Read(p []byte) (int, error) {
	if c.inBody && c.left <= 0 {
		c.once.Do(c.onCut)
		c.Conn.Close()
		return 0, errors.New("connection cut by the test")
	}
	switch {
	case c.inBody && len(p) > c.left:
		p = p[:c.left]
	case !c.inBody && len(p) > 64:
		p = p[:64] // small reads, so the cut falls where asked
	}
	n, err := c.Conn.Read(p)
	if c.inBody {
		c.left -= n
		return n, err
	}
	c.seen = append(c.seen, p[:n]...)
	if i := bytes.Index(c.seen, []byte("\r\n\r\n")); i >= 0 {
		c.inBody = true
		c.left -= len(c.seen) - (i + 4)
		c.seen = nil
	}
	return n, err
}

// TestJobEventsResume cuts the first connection of JobEvents after a few
// bytes, while the job runs and after it ended: the stream must resume
// with Last-Event-ID and deliver every event once, in order.
func TestJobEventsResume(t *testing.T) {
	srv := controlplanetest.Start(t, controlplanetest.Options{})
	admin := newCP(t, srv, srv.Token)
	ctx := testContext(t, 3*time.Minute)

	const lines = 40
	job := scriptJob(ctx, t, admin, srv, fmt.Sprintf("for i in $(seq 1 %d); do echo line $i; sleep 0.02; done", lines))
	var want strings.Builder
	for i := 1; i <= lines; i++ {
		fmt.Fprintf(&want, "line %d\n", i)
	}
	var reference []cpapi.Event
	// The first case runs while the job does (live events); the others
	// replay its log. Each limit cuts at a different place: in the first
	// event, further on, near the end.
	for _, limit := range []int{500, 20, 1500, 4000} {
		t.Run(fmt.Sprintf("cut after %d bytes", limit), func(t *testing.T) {
			cut := &cutter{limit: limit}
			tr := &http.Transport{DialContext: cut.dial}
			defer tr.CloseIdleConnections()
			cp := newCP(t, srv, srv.Token, client.WithHTTPClient(&http.Client{Transport: tr}))
			evs := allEvents(ctx, t, cp, job.ID)
			checkSeqs(t, evs)
			if got := output(t, evs); got != want.String() {
				t.Errorf("output = %q; want %q", got, want.String())
			}
			if dials, cuts := cut.counts(); cuts != 1 || dials < 2 {
				t.Errorf("%d dials, %d cuts; want the first connection cut and a resumed one", dials, cuts)
			}
			if reference == nil {
				reference = evs
			} else if len(evs) != len(reference) {
				t.Errorf("%d events; the first reading had %d", len(evs), len(reference))
			}
		})
	}
}

// TestJobEventsGivesUp checks that a stream whose server stays away ends
// with an error instead of retrying forever, and one whose context ends
// stops at once.
func TestJobEventsGivesUp(t *testing.T) {
	srv := controlplanetest.Start(t, controlplanetest.Options{})
	admin := newCP(t, srv, srv.Token)
	ctx := testContext(t, 2*time.Minute)
	job := scriptJob(ctx, t, admin, srv, "sleep 60")
	t.Cleanup(func() { _, _ = admin.CancelJob(context.Background(), job.ID) })

	sctx, cancel := context.WithCancel(ctx)
	st, err := admin.JobEvents(sctx, job.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.Next(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		for {
			if _, err := st.Next(); err != nil {
				done <- err
				return
			}
		}
	}()
	time.Sleep(200 * time.Millisecond)
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Next after the context ended = %v; want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Next did not return after the context ended")
	}

	// A revoked token makes the resume fail for good: no retry loop.
	tok, err := admin.CreateToken(ctx, cpapi.TokenRequest{Name: "short-lived"})
	if err != nil {
		t.Fatal(err)
	}
	cut := &cutter{limit: 150}
	tr := &http.Transport{DialContext: cut.dial}
	defer tr.CloseIdleConnections()
	cp := newCP(t, srv, tok.Secret, client.WithHTTPClient(&http.Client{Transport: tr}))
	st2, err := cp.JobEvents(ctx, job.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer st2.Close()
	if err := admin.RevokeToken(ctx, tok.ID); err != nil {
		t.Fatal(err)
	}
	for {
		_, err := st2.Next()
		if err == nil {
			continue
		}
		if !errors.Is(err, client.ErrUnauthorized) {
			t.Errorf("Next after the cut, with the token revoked = %v; want ErrUnauthorized", err)
		}
		break
	}
}
