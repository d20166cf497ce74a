package cli

import (
	"bufio"
	"context"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/corral-sh/corral/api/sandboxapi"
	"github.com/corral-sh/corral/client"
	"github.com/corral-sh/corral/internal/gittest"
	"github.com/corral-sh/corral/internal/sandboxd/gitops"
)

// TestRunAnswersAskpassPrompts: with the askpass socket set, a git
// credential prompt as the only argument is relayed before cobra sees the
// command line, and the answer printed.
func TestRunAnswersAskpassPrompts(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "s")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	prompts := make(chan string, 1)
	go func() {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		defer conn.Close()
		line, _ := bufio.NewReader(conn).ReadString('\n')
		prompts <- line
		io.WriteString(conn, "+the-answer\n")
	}()
	t.Setenv(gitops.AskpassSocketEnv, sock)

	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout := os.Stdout
	os.Stdout = w
	err = Run(context.Background(), []string{"Password for 'https://github.com': "})
	os.Stdout = stdout
	w.Close()
	out, _ := io.ReadAll(r)
	if err != nil || string(out) != "the-answer\n" {
		t.Errorf("Run(prompt) = %v, printed %q; want the answer", err, out)
	}
	if p := <-prompts; p != "Password for 'https://github.com': \n" {
		t.Errorf("the daemon received %q; want the prompt", p)
	}
	// Any other command line is cobra's, socket or not.
	if err := Run(context.Background(), []string{"no-such-command"}); err == nil {
		t.Errorf("Run(no-such-command) = nil; want cobra's error")
	}
}

// TestBinaryIsGitAskpass runs the built binaries (make test names them) as
// sandboxd and clones a private repository through them: git runs the
// binary itself as its askpass program.
func TestBinaryIsGitAskpass(t *testing.T) {
	bins := map[string]string{"corral": os.Getenv("CORRAL_TEST_BINARY"), "corral-sandboxd": os.Getenv("CORRAL_TEST_SANDBOXD_BINARY")}
	for name, bin := range bins {
		t.Run(name, func(t *testing.T) {
			if bin == "" {
				t.Skip("the binary's variable is not set (make test sets it)")
			}
			srv := gittest.New(t, gittest.Options{Username: "bot", Password: "tok-for-the-binary"})
			url := srv.Repo(t, "app.git", map[string]string{"a.txt": "a\n"})
			sock := filepath.Join(t.TempDir(), "s.sock")
			cmd := exec.Command(bin, "sandboxd", "--listen", "unix:"+sock, "--root", t.TempDir())
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
			c, err := client.New("unix:" + sock)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
				if _, err := c.Health(ctx); err == nil {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("%s sandboxd did not answer", name)
				}
			}
			res, err := c.GitClone(ctx, sandboxapi.GitCloneRequest{URL: url, Path: "/repo",
				Credentials: &sandboxapi.GitCredentials{Username: "bot", Password: "tok-for-the-binary"}})
			if err != nil || res.Head != srv.Head(t, "app.git", "main") {
				t.Errorf("GitClone through %s = %+v, %v; want main's head", name, res, err)
			}
		})
	}
}
