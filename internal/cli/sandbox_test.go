//go:build !slim

package cli

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/corral-sh/corral/api/cpapi"
)

func TestSandboxCommands(t *testing.T) {
	env := startCP(t)
	ctx := testCtx(t, 3*time.Minute)

	id := strings.TrimSpace(mustCorral(ctx, t, "sandbox", "create", "--template", env.srv.Template, "--timeout", "10m", "--env", "GREETING=hello"))
	if !strings.HasPrefix(id, "sb_") {
		t.Fatalf("sandbox create printed %q; want a sandbox id", id)
	}
	t.Cleanup(func() { _ = env.cp.DeleteSandbox(context.Background(), id) })

	t.Run("ls", func(t *testing.T) {
		out := mustCorral(ctx, t, "sandbox", "ls")
		if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 2 || !strings.HasPrefix(lines[1], id) ||
			!strings.Contains(lines[1], "bwrap") || !strings.Contains(lines[1], "in ") {
			t.Errorf("sandbox ls:\n%s\nwant a header and the sandbox", out)
		}
		var list cpapi.SandboxList
		if err := json.Unmarshal([]byte(mustCorral(ctx, t, "sandbox", "ls", "--json")), &list); err != nil ||
			len(list.Sandboxes) != 1 || list.Sandboxes[0].ID != id {
			t.Errorf("sandbox ls --json = %+v, %v", list, err)
		}
	})

	t.Run("exec", func(t *testing.T) {
		out, errOut, err := corral(ctx, nil, "sandbox", "exec", id, "--", "sh", "-c", "echo $GREETING; echo err >&2; exit 4")
		if exitCode(err) != 4 || out != "hello\n" || errOut != "err\n" {
			t.Errorf("sandbox exec = %q, %q, %v; want hello, err, exit 4", out, errOut, err)
		}
		if out := mustCorral(ctx, t, "sandbox", "exec", "--shell", id, "echo", "$((2+3))"); out != "5\n" {
			t.Errorf("sandbox exec --shell = %q; want 5", out)
		}
		_, _, err = corral(ctx, nil, "sandbox", "exec", "sb_nope", "true")
		checkMessage(t, err, "not found")
	})

	t.Run("cp", func(t *testing.T) {
		local := t.TempDir()
		file := filepath.Join(local, "note.txt")
		writeFile(t, file, "a note\n")
		tree := filepath.Join(local, "tree")
		writeFile(t, filepath.Join(tree, "a.txt"), "A")
		writeFile(t, filepath.Join(tree, "sub", "b.txt"), "B")
		if err := os.Symlink("a.txt", filepath.Join(tree, "link")); err != nil {
			t.Fatal(err)
		}

		mustCorral(ctx, t, "sandbox", "cp", file, id+":/workspace/")
		mustCorral(ctx, t, "sandbox", "cp", tree, id+":/workspace/tree")
		got := mustCorral(ctx, t, "sandbox", "exec", id, "--", "sh", "-c",
			"cat /workspace/note.txt /workspace/tree/a.txt /workspace/tree/sub/b.txt /workspace/tree/link")
		if got != "a note\nABA" {
			t.Errorf("after the uploads the sandbox holds %q; want the files", got)
		}

		back := t.TempDir()
		mustCorral(ctx, t, "sandbox", "cp", id+":/workspace/note.txt", filepath.Join(back, "n.txt"))
		mustCorral(ctx, t, "sandbox", "cp", id+":/workspace/tree", back) // into an existing dir: back/tree
		for path, want := range map[string]string{
			"n.txt": "a note\n", "tree/a.txt": "A", "tree/sub/b.txt": "B", "tree/link": "A",
		} {
			if b, err := os.ReadFile(filepath.Join(back, path)); err != nil || string(b) != want {
				t.Errorf("downloaded %s = %q, %v; want %q", path, b, err, want)
			}
		}
		if target, err := os.Readlink(filepath.Join(back, "tree", "link")); err != nil || target != "a.txt" {
			t.Errorf("downloaded link = %q, %v; want a symlink to a.txt", target, err)
		}
		if out := mustCorral(ctx, t, "sandbox", "cp", id+":/workspace/note.txt", "-"); out != "a note\n" {
			t.Errorf("cp to - printed %q", out)
		}
		_, _, err := corral(ctx, nil, "sandbox", "cp", id+":/workspace/missing", back)
		checkMessage(t, err, "not found")
		_, _, err = corral(ctx, nil, "sandbox", "cp", file, back)
		checkMessage(t, err, "one side must be <sandbox>:<path>")
	})

	t.Run("shell", func(t *testing.T) {
		out, _, err := corral(ctx, strings.NewReader("echo hi; exit 3\n"), "shell", id)
		if exitCode(err) != 3 {
			t.Errorf("shell exited with %v; want exit code 3", err)
		}
		if !strings.Contains(out, "hi") {
			t.Errorf("the shell showed %q; want hi", out)
		}
		out, _, err = corral(ctx, strings.NewReader("echo $0 here; exit\n"), "shell", "--cmd", "sh", id)
		if err != nil || !strings.Contains(out, "sh here") {
			t.Errorf("shell --cmd sh = %q, %v; want sh here, exit 0", out, err)
		}
	})

	t.Run("rm", func(t *testing.T) {
		if out := mustCorral(ctx, t, "sandbox", "rm", id); strings.TrimSpace(out) != id {
			t.Errorf("sandbox rm printed %q; want the id", out)
		}
		if out := mustCorral(ctx, t, "sandbox", "ls"); strings.Contains(out, id) {
			t.Errorf("sandbox ls after rm:\n%s", out)
		}
		_, _, err := corral(ctx, nil, "sandbox", "rm", id)
		checkMessage(t, err, "not found")
	})
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestTokenCommands(t *testing.T) {
	startCP(t)
	ctx := testCtx(t, time.Minute)

	out, errOut, err := corral(ctx, nil, "token", "create", "ci")
	if err != nil {
		t.Fatal(err)
	}
	secret := strings.TrimSpace(out)
	if !strings.HasPrefix(secret, "crl_") || !strings.Contains(errOut, "not shown again") {
		t.Fatalf("token create = %q, %q; want the secret on stdout and a warning", out, errOut)
	}
	var list cpapi.TokenList
	if err := json.Unmarshal([]byte(mustCorral(ctx, t, "token", "ls", "--json")), &list); err != nil {
		t.Fatal(err)
	}
	var id string
	for _, tok := range list.Tokens {
		if tok.Name == "ci" {
			id = tok.ID
		}
	}
	if id == "" {
		t.Fatalf("token ls --json = %+v; want ci", list)
	}
	if out := mustCorral(ctx, t, "token", "ls"); !strings.Contains(out, id) || !strings.Contains(out, "LAST USED") || strings.Contains(out, secret) {
		t.Errorf("token ls:\n%s\nwant the token without its secret", out)
	}
	mustCorral(ctx, t, "jobs", "--token", secret) // the new token works

	var admin cpapi.Token
	if err := json.Unmarshal([]byte(mustCorral(ctx, t, "token", "create", "--json", "--admin", "--tenant", "acme", "acme-admin")), &admin); err != nil ||
		!admin.Admin || admin.Secret == "" {
		t.Errorf("token create --json --admin --tenant = %+v, %v", admin, err)
	}

	mustCorral(ctx, t, "token", "revoke", id)
	_, _, err = corral(ctx, nil, "jobs", "--token", secret)
	checkMessage(t, err, "unauthorized")
	if exitCode(err) != 1 {
		t.Errorf("exit code %d; want 1", exitCode(err))
	}
}

func TestTenantCommands(t *testing.T) {
	startCP(t)
	ctx := testCtx(t, time.Minute)
	var tok cpapi.Token
	if err := json.Unmarshal([]byte(mustCorral(ctx, t, "token", "create", "--json", "--tenant", "acme", "acme-ci")), &tok); err != nil {
		t.Fatal(err)
	}

	if out := mustCorral(ctx, t, "tenant", "limits", "acme", "--max-sandboxes", "2"); !strings.Contains(out, "acme") || !strings.Contains(out, "unlimited") || !strings.Contains(out, " 2 ") {
		t.Errorf("tenant limits --max-sandboxes 2:\n%s\nwant acme with 2 sandboxes and unlimited jobs", out)
	}
	var got cpapi.Tenant
	if err := json.Unmarshal([]byte(mustCorral(ctx, t, "tenant", "limits", "acme", "--max-jobs", "3", "--json")), &got); err != nil ||
		got.MaxConcurrentJobs != 3 || got.MaxSandboxes != 2 {
		t.Errorf("tenant limits --max-jobs 3 --json = %+v, %v; want 3 jobs and 2 sandboxes kept", got, err)
	}
	var list cpapi.TenantList
	if err := json.Unmarshal([]byte(mustCorral(ctx, t, "tenant", "ls", "--json")), &list); err != nil || len(list.Tenants) < 2 {
		t.Errorf("tenant ls --json = %+v, %v; want the admin's tenant and acme", list, err)
	}
	// A tenant's own token reads its tenant, and may not change it.
	if out := mustCorral(ctx, t, "tenant", "show", "acme", "--token", tok.Secret); !strings.Contains(out, "acme") {
		t.Errorf("tenant show acme (as acme):\n%s", out)
	}
	_, _, err := corral(ctx, nil, "tenant", "limits", "acme", "--max-jobs", "0", "--token", tok.Secret)
	checkMessage(t, err, "admin")
	_, _, err = corral(ctx, nil, "tenant", "limits", "acme")
	checkMessage(t, err, "--max-jobs")
	_, _, err = corral(ctx, nil, "tenant", "limits", "acme", "--max-jobs", "-1")
	checkMessage(t, err, "negative")
}
