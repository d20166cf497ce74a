package client_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/corral-sh/corral/api/cpapi"
	"github.com/corral-sh/corral/api/sandboxapi"
	"github.com/corral-sh/corral/client"
	"github.com/corral-sh/corral/internal/controlplane/controlplanetest"
)

func TestControlPlaneSandboxes(t *testing.T) {
	srv := controlplanetest.Start(t, controlplanetest.Options{})
	cp := newCP(t, srv, srv.Token)
	ctx := testContext(t, 2*time.Minute)

	sb, err := cp.CreateSandbox(ctx, cpapi.SandboxRequest{Template: srv.Template, Labels: map[string]string{"purpose": "test"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cp.DeleteSandbox(context.Background(), sb.ID) })
	if sb.ID == "" || sb.Template != srv.Template || sb.Runtime != "bwrap" {
		t.Errorf("CreateSandbox = %+v; want a bwrap sandbox of %s", sb, srv.Template)
	}
	got, err := cp.GetSandbox(ctx, sb.ID)
	if err != nil || got.ID != sb.ID {
		t.Errorf("GetSandbox = %+v, %v; want %s", got, err, sb.ID)
	}
	list, err := cp.ListSandboxes(ctx)
	if err != nil || len(list) != 1 || list[0].ID != sb.ID {
		t.Errorf("ListSandboxes = %+v, %v; want [%s]", list, err, sb.ID)
	}
	ext, err := cp.ExtendSandbox(ctx, sb.ID, 3600)
	if err != nil || ext.ExpiresAt == nil || time.Until(*ext.ExpiresAt) < 50*time.Minute {
		t.Errorf("ExtendSandbox(3600) = %+v, %v; want it to expire in about an hour", ext, err)
	}

	c := cp.Sandbox(sb.ID)
	t.Run("exec", func(t *testing.T) {
		res, err := c.Exec(ctx, sandboxapi.ExecRequest{Command: "echo hi; exit 4", Shell: true})
		if err != nil {
			t.Fatal(err)
		}
		if res.Stdout != "hi\n" || res.ExitCode == nil || *res.ExitCode != 4 {
			t.Errorf("Exec = stdout %q, exit %v; want hi and 4", res.Stdout, res.ExitCode)
		}
		var out strings.Builder
		res, err = c.ExecStream(ctx, sandboxapi.ExecRequest{Command: "echo", Args: []string{"streamed"}}, func(_ string, b []byte) { out.Write(b) })
		if err != nil || out.String() != "streamed\n" || *res.ExitCode != 0 {
			t.Errorf("ExecStream = %q, %+v, %v; want streamed, exit 0", out.String(), res, err)
		}
	})

	t.Run("files", func(t *testing.T) {
		if _, err := c.WriteFile(ctx, "/workspace/a.txt", strings.NewReader("content"), 0o644); err != nil {
			t.Fatal(err)
		}
		body, err := c.ReadFile(ctx, "/workspace/a.txt")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(body)
		body.Close()
		if string(b) != "content" {
			t.Errorf("ReadFile = %q; want content", b)
		}
		if _, err := c.ReadFile(ctx, "/workspace/missing"); !errors.Is(err, client.ErrNotFound) {
			t.Errorf("ReadFile(missing) = %v; want ErrNotFound", err)
		}
	})

	t.Run("pty", func(t *testing.T) {
		p, err := c.Spawn(ctx, sandboxapi.SpawnRequest{Command: "bash", PTY: &sandboxapi.PTYSize{Rows: 24, Cols: 80}})
		if err != nil {
			t.Fatal(err)
		}
		st, err := c.Connect(ctx, p.ID, client.ConnectOptions{Offset: client.OffsetOldest, Reconnect: true})
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		if err := st.Resize(ctx, 30, 100); err != nil {
			t.Errorf("Resize: %v", err)
		}
		if _, err := st.Write([]byte("echo $((6*7)) $(stty size); exit 5\n")); err != nil {
			t.Fatal(err)
		}
		var out strings.Builder
		for {
			ev, err := st.Next(ctx)
			if err != nil {
				t.Fatalf("Next after %q: %v", out.String(), err)
			}
			if ev.Exit != nil {
				if ev.Exit.ExitCode == nil || *ev.Exit.ExitCode != 5 {
					t.Errorf("the shell exited with %+v; want 5", ev.Exit)
				}
				break
			}
			out.Write(ev.Data)
		}
		if !strings.Contains(out.String(), "42 30 100") {
			t.Errorf("the terminal showed %q; want 42 30 100", out.String())
		}
	})

	if err := cp.DeleteSandbox(ctx, sb.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := cp.GetSandbox(ctx, sb.ID); !errors.Is(err, client.ErrNotFound) {
		t.Errorf("GetSandbox after DeleteSandbox = %v; want ErrNotFound", err)
	}
	if _, err := c.Exec(ctx, sandboxapi.ExecRequest{Command: "true"}); !errors.Is(err, client.ErrNotFound) {
		t.Errorf("Exec after DeleteSandbox = %v; want ErrNotFound", err)
	}
}
