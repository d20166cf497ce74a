package client_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/corral-sh/corral/api/cpapi"
	"github.com/corral-sh/corral/api/sandboxapi"
	"github.com/corral-sh/corral/client"
	"github.com/corral-sh/corral/internal/controlplane/controlplanetest"
)

// TestControlPlaneErrors checks that every method reports the server's
// refusals as the right class: unknown ids and another tenant's ids are
// ErrNotFound, bad requests ErrInvalid, bad tokens ErrUnauthorized.
func TestControlPlaneErrors(t *testing.T) {
	srv := controlplanetest.Start(t, controlplanetest.Options{})
	admin := newCP(t, srv, srv.Token)
	ctx := testContext(t, 2*time.Minute)

	tok, err := admin.CreateToken(ctx, cpapi.TokenRequest{Name: "other", Tenant: "other"})
	if err != nil {
		t.Fatal(err)
	}
	other := newCP(t, srv, tok.Secret)
	job := scriptJob(ctx, t, admin, srv, "sleep 60")
	t.Cleanup(func() { _, _ = admin.CancelJob(context.Background(), job.ID) })
	sb, err := admin.CreateSandbox(ctx, cpapi.SandboxRequest{Template: srv.Template})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = admin.DeleteSandbox(context.Background(), sb.ID) })

	// calls are every method that names a job, a sandbox or a token.
	calls := []struct {
		name string
		call func(cp *client.ControlPlane, job, sandbox, token string) error
	}{
		{"GetJob", func(cp *client.ControlPlane, j, _, _ string) error { _, err := cp.GetJob(ctx, j); return err }},
		{"CancelJob", func(cp *client.ControlPlane, j, _, _ string) error { _, err := cp.CancelJob(ctx, j); return err }},
		{"SendMessage", func(cp *client.ControlPlane, j, _, _ string) error { return cp.SendMessage(ctx, j, "hi") }},
		{"JobEvents", func(cp *client.ControlPlane, j, _, _ string) error {
			st, err := cp.JobEvents(ctx, j, 0)
			if err == nil {
				st.Close()
			}
			return err
		}},
		{"EventsPage", func(cp *client.ControlPlane, j, _, _ string) error {
			_, err := cp.EventsPage(ctx, j, 0, 10)
			return err
		}},
		{"Artifacts", func(cp *client.ControlPlane, j, _, _ string) error { _, err := cp.Artifacts(ctx, j); return err }},
		{"Diff", func(cp *client.ControlPlane, j, _, _ string) error { _, err := cp.Diff(ctx, j); return err }},
		{"Status", func(cp *client.ControlPlane, j, _, _ string) error { _, err := cp.Status(ctx, j); return err }},
		{"GetSandbox", func(cp *client.ControlPlane, _, s, _ string) error { _, err := cp.GetSandbox(ctx, s); return err }},
		{"ExtendSandbox", func(cp *client.ControlPlane, _, s, _ string) error {
			_, err := cp.ExtendSandbox(ctx, s, 60)
			return err
		}},
		{"DeleteSandbox", func(cp *client.ControlPlane, _, s, _ string) error { return cp.DeleteSandbox(ctx, s) }},
		{"Sandbox.Exec", func(cp *client.ControlPlane, _, s, _ string) error {
			_, err := cp.Sandbox(s).Exec(ctx, sandboxapi.ExecRequest{Command: "true"})
			return err
		}},
		{"RevokeToken", func(cp *client.ControlPlane, _, _, tk string) error { return cp.RevokeToken(ctx, tk) }},
	}
	adminTokens, err := admin.ListTokens(ctx)
	if err != nil || len(adminTokens) == 0 {
		t.Fatalf("ListTokens = %v, %v", adminTokens, err)
	}
	for _, c := range calls {
		t.Run(c.name+"/unknown", func(t *testing.T) {
			if err := c.call(admin, "job_nope", "sb_nope", "tok_nope"); !errors.Is(err, client.ErrNotFound) {
				t.Errorf("%s(unknown id) = %v; want ErrNotFound", c.name, err)
			}
		})
		t.Run(c.name+"/other tenant", func(t *testing.T) {
			if err := c.call(other, job.ID, sb.ID, adminTokens[0].ID); !errors.Is(err, client.ErrNotFound) {
				t.Errorf("%s(another tenant's id) = %v; want ErrNotFound", c.name, err)
			}
		})
	}
	// The other tenant's attempts changed nothing.
	if j, err := admin.GetJob(ctx, job.ID); err != nil || client.FinalStatus(j.Status) {
		t.Errorf("after the other tenant's calls, GetJob = %+v, %v; want it still live", j, err)
	}
	if _, err := admin.GetSandbox(ctx, sb.ID); err != nil {
		t.Errorf("after the other tenant's calls, GetSandbox: %v", err)
	}

	t.Run("bad requests", func(t *testing.T) {
		bad := []struct {
			name string
			call func() error
		}{
			{"no task", func() error { _, err := admin.CreateJob(ctx, cpapi.JobRequest{Agent: cpapi.AgentScript}); return err }},
			{"unknown agent", func() error { _, err := admin.CreateJob(ctx, cpapi.JobRequest{Task: "x", Agent: "nope"}); return err }},
			{"script without command", func() error {
				_, err := admin.CreateJob(ctx, cpapi.JobRequest{Task: "x", Agent: cpapi.AgentScript})
				return err
			}},
			{"bad network", func() error {
				_, err := admin.CreateSandbox(ctx, cpapi.SandboxRequest{Template: srv.Template, Network: "bogus"})
				return err
			}},
			{"unknown status", func() error { _, err := admin.ListJobs(ctx, client.ListJobsOptions{Status: "bogus"}); return err }},
			{"limit too high", func() error { _, err := admin.ListJobs(ctx, client.ListJobsOptions{Limit: 100000}); return err }},
			{"bad token name", func() error { _, err := admin.CreateToken(ctx, cpapi.TokenRequest{Name: ""}); return err }},
			{"bad timeout", func() error { _, err := admin.ExtendSandbox(ctx, sb.ID, -1); return err }},
		}
		for _, b := range bad {
			err := b.call()
			var ae *client.APIError
			if !errors.Is(err, client.ErrInvalid) || !errors.As(err, &ae) || ae.Detail == "" {
				t.Errorf("%s: %v; want ErrInvalid with a detail", b.name, err)
				continue
			}
			if !strings.HasPrefix(err.Error(), "control plane: ") {
				t.Errorf("%s: the message %q does not name the control plane", b.name, err)
			}
		}
	})

	t.Run("bad tokens", func(t *testing.T) {
		for _, token := range []string{"", "crl_wrong", tok.Secret + "x"} {
			cp := newCP(t, srv, token)
			if _, err := cp.ListJobs(ctx, client.ListJobsOptions{}); !errors.Is(err, client.ErrUnauthorized) {
				t.Errorf("ListJobs with token %q = %v; want ErrUnauthorized", token, err)
			}
			if _, err := cp.Sandbox(sb.ID).Exec(ctx, sandboxapi.ExecRequest{Command: "true"}); !errors.Is(err, client.ErrUnauthorized) {
				t.Errorf("Sandbox.Exec with token %q = %v; want ErrUnauthorized", token, err)
			}
		}
		if _, err := other.CreateToken(ctx, cpapi.TokenRequest{Name: "x", Admin: true}); !errors.Is(err, client.ErrForbidden) {
			t.Errorf("CreateToken(admin) by a non-admin = %v; want ErrForbidden", err)
		}
	})
}

func TestControlPlaneTokens(t *testing.T) {
	srv := controlplanetest.Start(t, controlplanetest.Options{})
	admin := newCP(t, srv, srv.Token)
	ctx := testContext(t, time.Minute)

	tok, err := admin.CreateToken(ctx, cpapi.TokenRequest{Name: "ci"})
	if err != nil {
		t.Fatal(err)
	}
	if tok.Secret == "" || tok.ID == "" || tok.Admin {
		t.Fatalf("CreateToken = %+v; want a non-admin token with a secret", tok)
	}
	ci := newCP(t, srv, tok.Secret)
	if _, err := ci.ListJobs(ctx, client.ListJobsOptions{}); err != nil {
		t.Fatalf("ListJobs with the new token: %v", err)
	}
	list, err := admin.ListTokens(ctx)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, l := range list {
		if l.Secret != "" {
			t.Errorf("ListTokens shows the secret of %s", l.ID)
		}
		found = found || l.ID == tok.ID && l.Name == "ci"
	}
	if !found {
		t.Errorf("ListTokens = %+v; want %s (ci)", list, tok.ID)
	}
	if err := admin.RevokeToken(ctx, tok.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := ci.ListJobs(ctx, client.ListJobsOptions{}); !errors.Is(err, client.ErrUnauthorized) {
		t.Errorf("ListJobs with a revoked token = %v; want ErrUnauthorized", err)
	}
	t2, err := admin.CreateToken(ctx, cpapi.TokenRequest{Name: "acme-admin", Tenant: "acme", Admin: true})
	if err != nil || t2.Tenant == "" || !t2.Admin {
		t.Fatalf("CreateToken(tenant acme, admin) = %+v, %v", t2, err)
	}
}
