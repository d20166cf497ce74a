package forward

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/corral-sh/corral/internal/errdefs"
)

// TestMain fails the run if an accept or copy goroutine outlives its test.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// shortDir is a temporary directory with a path short enough for unix
// sockets (t.TempDir's can exceed sun_path).
func shortDir(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("", "fwd")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

// upstream is a unix socket server that answers each line with "echo:
// <line>" and, on "bye", writes its answer and closes. It serves until the
// test ends.
func upstream(t *testing.T, path string) net.Listener {
	t.Helper()
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				sc := bufio.NewScanner(c)
				for sc.Scan() {
					fmt.Fprintf(c, "echo: %s\n", sc.Text())
					if sc.Text() == "bye" {
						return
					}
				}
				// The client half-closed: answer after EOF too.
				fmt.Fprintf(c, "eof\n")
			}()
		}
	}()
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	return ln
}

func newManager(t *testing.T, dir string, o Options) *Manager {
	t.Helper()
	o.Dir = dir
	m := New(o)
	t.Cleanup(m.Shutdown)
	return m
}

func dial(t *testing.T, port int) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestForwardPipesBothWays(t *testing.T) {
	dir := shortDir(t)
	sock := filepath.Join(dir, "llm.sock")
	upstream(t, sock)
	m := newManager(t, dir, Options{})
	f, err := m.Open(0, sock)
	if err != nil {
		t.Fatal(err)
	}
	if f.Port == 0 || f.Address != "127.0.0.1:"+strconv.Itoa(f.Port) || f.Socket != sock || !strings.HasPrefix(f.ID, "f_") {
		t.Fatalf("Open = %+v", f)
	}
	c := dial(t, f.Port)
	r := bufio.NewReader(c)
	fmt.Fprintf(c, "hello\n")
	if got, _ := r.ReadString('\n'); got != "echo: hello\n" {
		t.Fatalf("got %q; want the echo", got)
	}
	// Half-close: the answer after our EOF still arrives.
	if err := c.(*net.TCPConn).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	rest, err := io.ReadAll(r)
	if err != nil || string(rest) != "eof\n" {
		t.Fatalf("after half-close got %q, %v; want \"eof\\n\"", rest, err)
	}
	list := m.List()
	if len(list) != 1 || list[0].ID != f.ID || list[0].Total != 1 {
		t.Fatalf("List() = %+v; want the forward with 1 connection", list)
	}
}

func TestForwardFixedPortAndConflicts(t *testing.T) {
	dir := shortDir(t)
	sock := filepath.Join(dir, "a.sock")
	upstream(t, sock)
	m := newManager(t, dir, Options{Max: 2})
	// A free port, found by listening and closing.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	f, err := m.Open(port, sock)
	if err != nil {
		t.Fatal(err)
	}
	if f.Port != port {
		t.Fatalf("Port = %d; want %d", f.Port, port)
	}
	if _, err := m.Open(port, sock); !errors.Is(err, errdefs.ErrConflict) {
		t.Fatalf("second Open on port %d: %v; want ErrConflict", port, err)
	}
	if _, err := m.Open(0, sock); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Open(0, sock); !errors.Is(err, errdefs.ErrConflict) {
		t.Fatalf("Open over Max: %v; want ErrConflict", err)
	}
	if err := m.Close(f.ID); err != nil {
		t.Fatal(err)
	}
	if err := m.Close(f.ID); !errors.Is(err, errdefs.ErrNotFound) {
		t.Fatalf("Close twice: %v; want ErrNotFound", err)
	}
	// The port is free again.
	if _, err := m.Open(port, sock); err != nil {
		t.Fatalf("Open after Close: %v", err)
	}
}

func TestForwardRefusesHostilePaths(t *testing.T) {
	dir := shortDir(t)
	outside := shortDir(t)
	good := filepath.Join(dir, "ok.sock")
	upstream(t, good)
	foreign := filepath.Join(outside, "x.sock")
	upstream(t, foreign)
	if err := os.Symlink(foreign, filepath.Join(dir, "link.sock")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(good, filepath.Join(dir, "inner.sock")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "file"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	m := newManager(t, dir, Options{})
	tests := []struct {
		name, socket string
		want         error
	}{
		{"empty", "", errdefs.ErrInvalid},
		{"relative path", "sub/ok.sock", errdefs.ErrInvalid},
		{"relative dot-dot", "../x.sock", errdefs.ErrInvalid},
		{"bare dot-dot", "..", errdefs.ErrInvalid},
		{"nul", dir + "/ok\x00.sock", errdefs.ErrInvalid},
		{"too long", dir + "/" + strings.Repeat("a", 120), errdefs.ErrInvalid},
		{"outside", foreign, errdefs.ErrForbidden},
		{"dot-dot", dir + "/../" + filepath.Base(outside) + "/x.sock", errdefs.ErrForbidden},
		{"the dir itself", dir, errdefs.ErrForbidden},
		{"etc", "/etc/passwd", errdefs.ErrForbidden},
		{"symlink out", filepath.Join(dir, "link.sock"), errdefs.ErrForbidden},
		{"missing", filepath.Join(dir, "nope.sock"), errdefs.ErrUnprocessable},
		{"regular file", filepath.Join(dir, "file"), errdefs.ErrUnprocessable},
		{"directory", filepath.Join(dir, "sub"), errdefs.ErrUnprocessable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := m.Open(0, tt.socket); !errors.Is(err, tt.want) {
				t.Fatalf("Open(%q) = %v; want %v", tt.socket, err, tt.want)
			}
		})
	}
	for _, port := range []int{-1, 65536} {
		if _, err := m.Open(port, good); !errors.Is(err, errdefs.ErrInvalid) {
			t.Errorf("Open(port %d) = %v; want ErrInvalid", port, err)
		}
	}
	// A bare name is a socket in the directory.
	if f, err := m.Open(0, "ok.sock"); err != nil || f.Socket != good {
		t.Fatalf("Open(ok.sock) = %+v, %v; want the socket %s", f, err, good)
	} else if err := m.Close(f.ID); err != nil {
		t.Fatal(err)
	}
	// A symlink that stays inside is fine, and dials its target.
	f, err := m.Open(0, filepath.Join(dir, "inner.sock"))
	if err != nil {
		t.Fatalf("symlink inside: %v", err)
	}
	c := dial(t, f.Port)
	fmt.Fprintf(c, "bye\n")
	if got, _ := bufio.NewReader(c).ReadString('\n'); got != "echo: bye\n" {
		t.Fatalf("through the inner symlink got %q", got)
	}
	if n := len(m.List()); n != 1 {
		t.Fatalf("%d forwards after refusals; want 1", n)
	}
}

func TestForwardCloseCutsConnections(t *testing.T) {
	dir := shortDir(t)
	sock := filepath.Join(dir, "s.sock")
	upstream(t, sock)
	m := newManager(t, dir, Options{})
	f, err := m.Open(0, sock)
	if err != nil {
		t.Fatal(err)
	}
	c := dial(t, f.Port)
	r := bufio.NewReader(c)
	fmt.Fprintf(c, "one\n")
	if _, err := r.ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	if got := m.List()[0].Active; got != 1 {
		t.Fatalf("Active = %d; want 1", got)
	}
	if err := m.Close(f.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := r.ReadString('\n'); err == nil {
		t.Fatal("the connection survived its forward")
	}
	if _, err := net.Dial("tcp", f.Address); err == nil {
		t.Fatal("the listener survived its forward")
	}
}

// TestForwardSocketGoneAndBack: while the socket is gone, connections are
// closed at once; a new listener on the same path (a restarted control
// plane) serves the same forward.
func TestForwardSocketGoneAndBack(t *testing.T) {
	dir := shortDir(t)
	sock := filepath.Join(dir, "s.sock")
	ln := upstream(t, sock)
	m := newManager(t, dir, Options{})
	f, err := m.Open(0, sock)
	if err != nil {
		t.Fatal(err)
	}
	ln.Close() // removes the socket file too
	c := dial(t, f.Port)
	if n, err := c.Read(make([]byte, 1)); err == nil {
		t.Fatalf("read %d bytes from a forward without upstream", n)
	}
	upstream(t, sock)
	c = dial(t, f.Port)
	fmt.Fprintf(c, "back\n")
	if got, _ := bufio.NewReader(c).ReadString('\n'); got != "echo: back\n" {
		t.Fatalf("after the restart got %q", got)
	}
}

func TestForwardConcurrentClients(t *testing.T) {
	dir := shortDir(t)
	sock := filepath.Join(dir, "s.sock")
	upstream(t, sock)
	m := newManager(t, dir, Options{MaxConns: 4}) // more clients than slots: they queue
	f, err := m.Open(0, sock)
	if err != nil {
		t.Fatal(err)
	}
	const clients = 32
	errs := make(chan error, clients)
	for i := range clients {
		go func() {
			c, err := net.Dial("tcp", f.Address)
			if err != nil {
				errs <- err
				return
			}
			defer c.Close()
			fmt.Fprintf(c, "c%d\nbye\n", i)
			r := bufio.NewReader(c)
			a, _ := r.ReadString('\n')
			b, _ := r.ReadString('\n')
			if a != fmt.Sprintf("echo: c%d\n", i) || b != "echo: bye\n" {
				errs <- fmt.Errorf("client %d got %q %q", i, a, b)
				return
			}
			errs <- nil
		}()
	}
	for range clients {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	if got := m.List()[0].Total; got != clients {
		t.Errorf("Total = %d; want %d", got, clients)
	}
}

func TestShutdown(t *testing.T) {
	dir := shortDir(t)
	sock := filepath.Join(dir, "s.sock")
	upstream(t, sock)
	m := New(Options{Dir: dir})
	f, err := m.Open(0, sock)
	if err != nil {
		t.Fatal(err)
	}
	c := dial(t, f.Port)
	fmt.Fprintf(c, "x\n")
	if _, err := bufio.NewReader(c).ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { m.Shutdown(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Shutdown hangs with an open connection")
	}
	if _, err := m.Open(0, sock); !errors.Is(err, errdefs.ErrUnavailable) {
		t.Fatalf("Open after Shutdown: %v; want ErrUnavailable", err)
	}
	m.Shutdown() // idempotent
}
