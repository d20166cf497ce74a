package client_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/corral-sh/corral/api/sandboxapi"
	"github.com/corral-sh/corral/client"
)

// received is what a Stream delivered until its end.
type received struct {
	data      []byte // both streams, in offset order
	stdout    []byte
	stderr    []byte
	truncated []int64
	exit      *client.Exit
	err       error // what Next returned last: io.EOF after an exit
}

// collect reads st until it ends, checking that offsets are contiguous;
// onData, when set, runs after each data event.
func collect(ctx context.Context, t *testing.T, st *client.Stream, onData func(r *received)) *received {
	t.Helper()
	r := &received{}
	next := int64(-1)
	for {
		ev, err := st.Next(ctx)
		if err != nil {
			r.err = err
			return r
		}
		switch {
		case ev.Truncated != nil:
			r.truncated = append(r.truncated, ev.Truncated.From)
			next = ev.Truncated.From
		case ev.Exit != nil:
			r.exit = ev.Exit
		default:
			if next >= 0 && ev.Offset != next {
				t.Errorf("data event at offset %d; want %d", ev.Offset, next)
			}
			next = ev.Offset + int64(len(ev.Data))
			r.data = append(r.data, ev.Data...)
			if ev.Stream == sandboxapi.StreamStderr {
				r.stderr = append(r.stderr, ev.Data...)
			} else {
				r.stdout = append(r.stdout, ev.Data...)
			}
			if st.Offset() != next {
				t.Errorf("Offset() = %d after a data event ending at %d", st.Offset(), next)
			}
			if onData != nil {
				onData(r)
			}
		}
	}
}

func TestConnectReplayAndLive(t *testing.T) {
	forEachTransport(t, func(t *testing.T, d *daemon) {
		ctx := testContext(t, 10*time.Second)
		// Prints a first part, then echoes stdin until it closes.
		p, err := d.c.Spawn(ctx, sandboxapi.SpawnRequest{
			Command: "sh", Args: []string{"-c", "printf 'first\\n'; printf 'warn\\n' >&2; cat; echo bye"},
			Stdin: true,
		})
		if err != nil {
			t.Fatalf("Spawn: %v", err)
		}
		t.Cleanup(func() { d.c.DeleteProcess(context.Background(), p.ID) })
		for {
			got, err := d.c.GetProcess(ctx, p.ID)
			if err != nil {
				t.Fatal(err)
			}
			if got.OutputBytes >= int64(len("first\nwarn\n")) {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}

		// From an offset inside the replay: only the rest comes.
		st2, err := d.c.Connect(ctx, p.ID, client.ConnectOptions{Offset: 2})
		if err != nil {
			t.Fatalf("Connect(offset 2): %v", err)
		}
		ev, err := st2.Next(ctx)
		if err != nil || ev.Offset != 2 {
			t.Fatalf("Connect(offset 2): first event %+v, %v; want data at offset 2", ev, err)
		}
		st2.Close()
		if _, err := st2.Next(ctx); !errors.Is(err, client.ErrStreamClosed) && err != nil {
			// Buffered events may still come; any error must be ErrStreamClosed.
			t.Errorf("Next after Close: %v; want ErrStreamClosed", err)
		}

		st, err := d.c.Connect(ctx, p.ID, client.ConnectOptions{Offset: client.OffsetOldest})
		if err != nil {
			t.Fatalf("Connect: %v", err)
		}
		defer st.Close()
		sent := false
		r := collect(ctx, t, st, func(r *received) {
			if !sent && bytes.Contains(r.data, []byte("warn\n")) && bytes.Contains(r.data, []byte("first\n")) {
				sent = true
				if _, err := st.Write([]byte("live\n")); err != nil {
					t.Errorf("Write: %v", err)
				}
				if err := st.CloseStdin(ctx); err != nil {
					t.Errorf("CloseStdin: %v", err)
				}
			}
		})
		if !errors.Is(r.err, io.EOF) {
			t.Errorf("stream ended with %v; want io.EOF after the exit", r.err)
		}
		if got, want := string(r.stdout), "first\nlive\nbye\n"; got != want {
			t.Errorf("stdout = %q; want %q", got, want)
		}
		if got, want := string(r.stderr), "warn\n"; got != want {
			t.Errorf("stderr = %q; want %q", got, want)
		}
		if r.exit == nil || r.exit.ExitCode == nil || *r.exit.ExitCode != 0 {
			t.Errorf("exit = %+v; want exit code 0", r.exit)
		}
		if len(r.truncated) != 0 {
			t.Errorf("truncated notices %v; want none", r.truncated)
		}
		if _, err := st.Write([]byte("late")); err == nil {
			t.Errorf("Write after exit succeeded; want an error")
		}
	})
}

// TestConnectTruncated connects from 0 to a process whose output has
// overflowed a small window: a Truncated event tells where it resumes.
func TestConnectTruncated(t *testing.T) {
	forEachTransport(t, func(t *testing.T, d *daemon) {
		ctx := testContext(t, 10*time.Second)
		p, err := d.c.Spawn(ctx, sandboxapi.SpawnRequest{
			Command: "sh", Args: []string{"-c", "i=0; while [ $i -lt 2000 ]; do echo line-$i; i=$((i+1)); done"},
			BufferBytes: 4096,
		})
		if err != nil {
			t.Fatalf("Spawn: %v", err)
		}
		t.Cleanup(func() { d.c.DeleteProcess(context.Background(), p.ID) })
		done := waitExited(ctx, t, d.c, p.ID)

		st, err := d.c.Connect(ctx, p.ID, client.ConnectOptions{})
		if err != nil {
			t.Fatalf("Connect: %v", err)
		}
		defer st.Close()
		r := collect(ctx, t, st, nil)
		if len(r.truncated) != 1 || r.truncated[0] <= 0 {
			t.Fatalf("truncated notices %v; want one, past 0", r.truncated)
		}
		if got, want := r.truncated[0]+int64(len(r.data)), done.OutputBytes; got != want {
			t.Errorf("truncated.From + replayed bytes = %d; want output_bytes %d", got, want)
		}
		if !strings.HasSuffix(string(r.data), "line-1999\n") {
			t.Errorf("replay ends %q; want line-1999", r.data[max(0, len(r.data)-20):])
		}

		// OffsetOldest gets the same bytes without the notice.
		st2, err := d.c.Connect(ctx, p.ID, client.ConnectOptions{Offset: client.OffsetOldest})
		if err != nil {
			t.Fatalf("Connect(oldest): %v", err)
		}
		defer st2.Close()
		r2 := collect(ctx, t, st2, nil)
		if len(r2.truncated) != 0 || !bytes.Equal(r2.data, r.data) {
			t.Errorf("OffsetOldest: %d truncated notices, %d bytes; want 0 and the %d bytes from 0", len(r2.truncated), len(r2.data), len(r.data))
		}
	})
}

// TestReconnectWithoutLoss cuts the connections under a Reconnect stream
// while a process prints, and checks that what the stream delivered is
// byte for byte the process's whole output.
func TestReconnectWithoutLoss(t *testing.T) {
	forEachTransport(t, func(t *testing.T, d *daemon) {
		ctx := testContext(t, 30*time.Second)
		const lines = 3000
		p, err := d.c.Spawn(ctx, sandboxapi.SpawnRequest{
			Command: "sh",
			Args: []string{"-c", fmt.Sprintf(
				`i=1; while [ $i -le %d ]; do echo line-$i; [ $((i %% 100)) = 0 ] && sleep 0.05; i=$((i+1)); done`, lines)},
		})
		if err != nil {
			t.Fatalf("Spawn: %v", err)
		}
		t.Cleanup(func() { d.c.DeleteProcess(context.Background(), p.ID) })

		st, err := d.c.Connect(ctx, p.ID, client.ConnectOptions{Reconnect: true})
		if err != nil {
			t.Fatalf("Connect: %v", err)
		}
		defer st.Close()
		// Cut four times; the odd cuts also keep the network down for a
		// while, so the process writes output the stream must catch up on.
		cuts, nextCut := 0, 5000
		r := collect(ctx, t, st, func(r *received) {
			if len(r.data) >= nextCut && cuts < 4 {
				if d.dials.cut(time.Duration(cuts%2)*300*time.Millisecond) > 0 {
					cuts++
				}
				nextCut += 6000
			}
		})
		if cuts == 0 {
			t.Fatalf("no connection was cut; the test proves nothing")
		}
		if !errors.Is(r.err, io.EOF) || r.exit == nil {
			t.Fatalf("stream ended with %v, exit %+v; want io.EOF after an exit", r.err, r.exit)
		}
		if len(r.truncated) != 0 {
			t.Errorf("truncated notices %v; want none (the output fits the window)", r.truncated)
		}
		if got := d.dials.dialed(); got <= cuts {
			t.Errorf("dialed %d times for %d cuts; want a redial after each", got, cuts)
		}
		want := readAll(ctx, t, d.c, p.ID)
		if !bytes.Equal(r.data, want) {
			t.Fatalf("stream delivered %d bytes, the output has %d; first difference at %d",
				len(r.data), len(want), firstDiff(r.data, want))
		}
		if !bytes.HasSuffix(want, fmt.Appendf(nil, "line-%d\n", lines)) {
			t.Errorf("output ends %q; want line-%d", want[max(0, len(want)-20):], lines)
		}
		if st.Offset() != int64(len(want)) {
			t.Errorf("Offset() = %d; want %d", st.Offset(), len(want))
		}
		t.Logf("%d bytes over %d cuts and %d dials", len(want), cuts, d.dials.dialed())
	})
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// TestBinaryOutput checks that every byte value, invalid UTF-8 included,
// survives the stream, ReadOutput and exec.
func TestBinaryOutput(t *testing.T) {
	var want []byte
	var format strings.Builder
	for i := range 256 {
		want = append(want, byte(i))
		fmt.Fprintf(&format, `\%03o`, i)
	}
	script := "printf '" + format.String() + "'"
	forEachTransport(t, func(t *testing.T, d *daemon) {
		ctx := testContext(t, 10*time.Second)
		p, err := d.c.Spawn(ctx, sandboxapi.SpawnRequest{Command: "sh", Args: []string{"-c", script}})
		if err != nil {
			t.Fatalf("Spawn: %v", err)
		}
		t.Cleanup(func() { d.c.DeleteProcess(context.Background(), p.ID) })
		st, err := d.c.Connect(ctx, p.ID, client.ConnectOptions{})
		if err != nil {
			t.Fatalf("Connect: %v", err)
		}
		defer st.Close()
		r := collect(ctx, t, st, nil)
		if !bytes.Equal(r.stdout, want) {
			t.Errorf("stream stdout = %q; want bytes 0..255", r.stdout)
		}
		if got := readAll(ctx, t, d.c, p.ID); !bytes.Equal(got, want) {
			t.Errorf("ReadOutput = %q; want bytes 0..255", got)
		}
		res, err := d.c.Exec(ctx, sandboxapi.ExecRequest{Command: script, Shell: true})
		if err != nil {
			t.Fatalf("Exec: %v", err)
		}
		var streamed []byte
		if _, err := d.c.ExecStream(ctx, sandboxapi.ExecRequest{Command: script, Shell: true}, func(_ string, data []byte) {
			streamed = append(streamed, data...)
		}); err != nil {
			t.Fatalf("ExecStream: %v", err)
		}
		if !bytes.Equal(streamed, want) {
			t.Errorf("ExecStream stdout = %q; want bytes 0..255", streamed)
		}
		// The JSON form can only carry text; the daemon must not corrupt
		// the valid part.
		if !strings.HasPrefix(res.Stdout, string(want[:0x7f])) {
			t.Errorf("Exec stdout = %q; want it to start with bytes 0..126", res.Stdout)
		}
	})
}

// TestConnectControls sends control frames over the stream: refusals come
// back as events, a signal ends the process.
func TestConnectControls(t *testing.T) {
	forEachTransport(t, func(t *testing.T, d *daemon) {
		ctx := testContext(t, 10*time.Second)
		p, err := d.c.Spawn(ctx, sandboxapi.SpawnRequest{Command: "sleep", Args: []string{"30"}})
		if err != nil {
			t.Fatalf("Spawn: %v", err)
		}
		t.Cleanup(func() { d.c.DeleteProcess(context.Background(), p.ID) })
		st, err := d.c.Connect(ctx, p.ID, client.ConnectOptions{Reconnect: true})
		if err != nil {
			t.Fatalf("Connect: %v", err)
		}
		defer st.Close()
		if err := st.Resize(ctx, 0, 80); !errors.Is(err, client.ErrInvalid) {
			t.Errorf("Resize(0, 80) = %v; want ErrInvalid before sending", err)
		}
		if err := st.Resize(ctx, 40, 100); err != nil {
			t.Fatalf("Resize: %v", err)
		}
		ev, err := st.Next(ctx)
		if err != nil || ev.Refused == "" {
			t.Errorf("after resizing a process without a PTY: %+v, %v; want a Refused event", ev, err)
		}
		if err := st.Signal(ctx, "SIGTERM"); err != nil {
			t.Fatalf("Signal: %v", err)
		}
		r := collect(ctx, t, st, nil)
		if r.exit == nil || r.exit.Signal == nil || !strings.Contains(*r.exit.Signal, "TERM") {
			t.Errorf("exit after SIGTERM = %+v; want signal SIGTERM", r.exit)
		}
		if !errors.Is(r.err, io.EOF) {
			t.Errorf("stream ended with %v; want io.EOF", r.err)
		}
	})
}
