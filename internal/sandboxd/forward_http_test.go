package sandboxd_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/corral-sh/corral/api/sandboxapi"
	"github.com/corral-sh/corral/client"
	"github.com/corral-sh/corral/internal/sandboxd"
	"github.com/corral-sh/corral/internal/sandboxd/sandboxdtest"
)

// forwardDaemon starts a daemon whose forward directory holds one unix
// socket answering each line with "echo: <line>"; it returns the client,
// the daemon and the socket's path.
func forwardDaemon(t *testing.T) (*client.Client, *sandboxdtest.Daemon, string) {
	t.Helper()
	dir, err := os.MkdirTemp("", "fwd") // short: sun_path is 108 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "svc.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				sc := bufio.NewScanner(c)
				for sc.Scan() {
					fmt.Fprintf(c, "echo: %s\n", sc.Text())
				}
			}()
		}
	}()
	d := sandboxdtest.Start(t, sandboxdtest.Options{Config: sandboxd.Config{Token: "tok", ForwardDir: dir}})
	t.Cleanup(func() { ln.Close(); <-done }) // after the daemon (cleanups run last-in first-out)
	c, err := client.New(d.URL, client.WithToken("tok"))
	if err != nil {
		t.Fatal(err)
	}
	return c, d, sock
}

func TestForwardsAPI(t *testing.T) {
	c, _, sock := forwardDaemon(t)
	ctx := context.Background()
	f, err := c.CreateForward(ctx, sandboxapi.ForwardRequest{Socket: filepath.Base(sock)}) // a name in the directory
	if err != nil {
		t.Fatal(err)
	}
	if f.Socket != sock {
		t.Errorf("Socket = %q; want %q", f.Socket, sock)
	}
	conn, err := net.Dial("tcp", f.Address)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "ping\n")
	if got, _ := bufio.NewReader(conn).ReadString('\n'); got != "echo: ping\n" {
		t.Fatalf("through the forward got %q; want the echo", got)
	}
	list, err := c.ListForwards(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].ID != f.ID || list[0].Port != f.Port || list[0].Active != 1 {
		t.Fatalf("ListForwards = %+v; want the one forward with 1 active connection", list)
	}
	if err := c.DeleteForward(ctx, f.ID); err != nil {
		t.Fatal(err)
	}
	if err := c.DeleteForward(ctx, f.ID); !errors.Is(err, client.ErrNotFound) {
		t.Fatalf("second delete: %v; want ErrNotFound", err)
	}
	if list, _ := c.ListForwards(ctx); len(list) != 0 {
		t.Fatalf("ListForwards after delete = %+v", list)
	}
}

func TestForwardsAPIHostile(t *testing.T) {
	c, d, sock := forwardDaemon(t)
	dir := filepath.Dir(sock)
	if err := os.WriteFile(filepath.Join(dir, "plain"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	tests := []struct {
		name, body string
		want       int
	}{
		{"not json", `{`, http.StatusBadRequest},
		{"unknown field", `{"socket":"` + sock + `","host":"0.0.0.0"}`, http.StatusBadRequest},
		{"no socket", `{}`, http.StatusBadRequest},
		{"relative path", `{"socket":"x/svc.sock"}`, http.StatusBadRequest},
		{"bad port", `{"socket":"` + sock + `","listen_port":70000}`, http.StatusBadRequest},
		{"traversal", `{"socket":"` + dir + `/../../run/docker.sock"}`, http.StatusForbidden},
		{"outside", `{"socket":"/var/run/docker.sock"}`, http.StatusForbidden},
		{"not a socket", `{"socket":"` + dir + `/plain"}`, http.StatusUnprocessableEntity},
		{"missing", `{"socket":"` + dir + `/nope.sock"}`, http.StatusUnprocessableEntity},
		{"port taken", fmt.Sprintf(`{"socket":%q,"listen_port":%d}`, sock, taken.Addr().(*net.TCPAddr).Port), http.StatusConflict},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := d.HTTP.Post(d.URL+"/v1/forwards", "application/json", strings.NewReader(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			wantProblem(t, "POST /v1/forwards "+tt.body, resp, tt.want)
		})
	}
	req, _ := http.NewRequest(http.MethodDelete, d.URL+"/v1/forwards/f_nope", nil)
	resp, err := d.HTTP.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	wantProblem(t, "DELETE unknown", resp, http.StatusNotFound)
	// Without the token: 401, nothing opened.
	resp, err = http.Post(d.URL+"/v1/forwards", "application/json", strings.NewReader(`{"socket":"`+sock+`"}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	wantProblem(t, "POST without token", resp, http.StatusUnauthorized)
	if list, err := c.ListForwards(context.Background()); err != nil || len(list) != 0 {
		t.Fatalf("ListForwards after refusals = %+v, %v; want none", list, err)
	}
}
