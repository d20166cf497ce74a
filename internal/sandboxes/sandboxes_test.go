package sandboxes_test

import (
	"context"
	"errors"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/corral-sh/corral/api/cpapi"
	"github.com/corral-sh/corral/api/sandboxapi"
	"github.com/corral-sh/corral/internal/errdefs"
	"github.com/corral-sh/corral/internal/runtime"
	"github.com/corral-sh/corral/internal/sandboxes"
	"github.com/corral-sh/corral/internal/sandboxes/sandboxestest"
)

func TestMain(m *testing.M) { os.Exit(sandboxestest.Main(m)) }

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// create makes a sandbox through the service or fails the test; Env's
// cleanup deletes it.
func create(t *testing.T, e *sandboxestest.Env, tenant string, req cpapi.SandboxRequest, opts sandboxes.CreateOptions) *cpapi.Sandbox {
	t.Helper()
	sb, err := e.Service.Create(testCtx(t), tenant, req, opts)
	if err != nil {
		t.Fatalf("Create(%+v) = %v", req, err)
	}
	return sb
}

// run executes a shell script in the sandbox through the service's client.
func run(t *testing.T, e *sandboxestest.Env, tenant, id, script string) string {
	t.Helper()
	c, err := e.Service.Client(testCtx(t), tenant, id)
	if err != nil {
		t.Fatalf("Client(%s) = %v", id, err)
	}
	res, err := c.Exec(testCtx(t), sandboxapi.ExecRequest{Command: "sh", Args: []string{"-c", script}})
	if err != nil {
		t.Fatalf("exec %q in %s: %v", script, id, err)
	}
	if res.ExitCode == nil || *res.ExitCode != 0 {
		t.Fatalf("exec %q in %s: exit %v: %s", script, id, res.ExitCode, res.Stderr)
	}
	return strings.TrimSpace(res.Stdout)
}

func TestCreateGetListDelete(t *testing.T) {
	e := sandboxestest.New(t, sandboxes.Options{})
	tn := e.Tenant(t, "acme", 0)
	before := time.Now()
	sb := create(t, e, tn, cpapi.SandboxRequest{TimeoutS: 60, Env: map[string]string{"GREETING": "hello"},
		Labels: map[string]string{"team": "infra"}}, sandboxes.CreateOptions{})

	if sb.Status != sandboxes.StatusRunning || sb.Runtime != "bwrap" || sb.Template != e.Template ||
		!strings.HasPrefix(sb.ID, "sb_") || sb.Labels["team"] != "infra" {
		t.Errorf("Create = %+v; want running on bwrap with template %s and label team=infra", sb, e.Template)
	}
	if sb.ExpiresAt == nil || sb.ExpiresAt.Before(before.Add(59*time.Second)) || sb.ExpiresAt.After(time.Now().Add(61*time.Second)) {
		t.Errorf("ExpiresAt = %v; want about 60 s from now", sb.ExpiresAt)
	}
	if got := run(t, e, tn, sb.ID, "echo $GREETING; id -u"); got != "hello\n1000" {
		t.Errorf("env and user in the sandbox = %q; want %q", got, "hello\n1000")
	}

	got, err := e.Service.Get(testCtx(t), tn, sb.ID)
	if err != nil || got.ID != sb.ID || got.Status != sandboxes.StatusRunning || !got.ExpiresAt.Equal(*sb.ExpiresAt) {
		t.Errorf("Get = %+v, %v; want %+v", got, err, sb)
	}
	list, err := e.Service.List(testCtx(t), tn)
	if err != nil || len(list.Sandboxes) != 1 || list.Sandboxes[0].ID != sb.ID {
		t.Errorf("List = %+v, %v; want just %s", list, err, sb.ID)
	}
	// The record keeps the request, but not env values (they may be secrets).
	rec, err := e.Store.GetSandbox(testCtx(t), tn, sb.ID)
	if err != nil || strings.Contains(string(rec.Spec), "hello") || !strings.Contains(string(rec.Spec), "GREETING") {
		t.Errorf("stored spec = %s, %v; want env names without values", rec.Spec, err)
	}

	if err := e.Service.Delete(testCtx(t), tn, sb.ID); err != nil {
		t.Fatalf("Delete = %v", err)
	}
	if _, err := e.Service.Get(testCtx(t), tn, sb.ID); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("Get after Delete = %v; want not found", err)
	}
	if _, err := e.Runtime.Get(testCtx(t), sb.ID); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("runtime Get after Delete = %v; want not found", err)
	}
	if err := e.Service.Delete(testCtx(t), tn, sb.ID); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("second Delete = %v; want not found", err)
	}
	if _, _, err := e.Service.Dial(testCtx(t), tn, sb.ID); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("Dial after Delete = %v; want not found (the lookup cache is dropped)", err)
	}
}

func TestTenantIsolation(t *testing.T) {
	e := sandboxestest.New(t, sandboxes.Options{})
	a, b := e.Tenant(t, "a", 0), e.Tenant(t, "b", 0)
	sb := create(t, e, a, cpapi.SandboxRequest{}, sandboxes.CreateOptions{})
	// Warm the lookup cache for a, so b is refused from the cache too.
	if _, _, err := e.Service.Dial(testCtx(t), a, sb.ID); err != nil {
		t.Fatalf("Dial by owner = %v", err)
	}
	ctx := testCtx(t)
	calls := map[string]func() error{
		"Get":    func() error { _, err := e.Service.Get(ctx, b, sb.ID); return err },
		"Delete": func() error { return e.Service.Delete(ctx, b, sb.ID) },
		"Extend": func() error { _, err := e.Service.Extend(ctx, b, sb.ID, 60); return err },
		"Dial":   func() error { _, _, err := e.Service.Dial(ctx, b, sb.ID); return err },
		"Client": func() error { _, err := e.Service.Client(ctx, b, sb.ID); return err },
		"Alive":  func() error { return e.Service.Alive(ctx, b, sb.ID) },
	}
	for name, call := range calls {
		if err := call(); !errors.Is(err, errdefs.ErrNotFound) {
			t.Errorf("%s of another tenant's sandbox = %v; want not found", name, err)
		}
	}
	if list, err := e.Service.List(ctx, b); err != nil || len(list.Sandboxes) != 0 {
		t.Errorf("List for b = %+v, %v; want empty", list, err)
	}
	if err := e.Service.Alive(ctx, a, sb.ID); err != nil {
		t.Errorf("Alive by owner after b's attempts = %v", err)
	}
}

func TestCreateValidation(t *testing.T) {
	e := sandboxestest.New(t, sandboxes.Options{MaxTimeout: time.Hour})
	tn := e.Tenant(t, "acme", 0)
	many := map[string]string{}
	for i := range 64 {
		many["l"+strings.Repeat("x", i%10)+string(rune('a'+i%26))+string(rune('a'+i/26))] = "v"
	}
	tests := []struct {
		name string
		req  cpapi.SandboxRequest
		opts sandboxes.CreateOptions
		want error
	}{
		{"unknown runtime", cpapi.SandboxRequest{Runtime: "kvm"}, sandboxes.CreateOptions{}, errdefs.ErrUnprocessable},
		{"network host", cpapi.SandboxRequest{Network: "host"}, sandboxes.CreateOptions{}, errdefs.ErrInvalid},
		{"negative cpus", cpapi.SandboxRequest{Resources: &cpapi.Resources{CPUs: -1}}, sandboxes.CreateOptions{}, errdefs.ErrInvalid},
		{"NaN cpus", cpapi.SandboxRequest{Resources: &cpapi.Resources{CPUs: math.NaN()}}, sandboxes.CreateOptions{}, errdefs.ErrInvalid},
		{"huge cpus", cpapi.SandboxRequest{Resources: &cpapi.Resources{CPUs: 1e6}}, sandboxes.CreateOptions{}, errdefs.ErrInvalid},
		{"negative memory", cpapi.SandboxRequest{Resources: &cpapi.Resources{MemoryMB: -5}}, sandboxes.CreateOptions{}, errdefs.ErrInvalid},
		{"huge pids", cpapi.SandboxRequest{Resources: &cpapi.Resources{PIDs: 1 << 40}}, sandboxes.CreateOptions{}, errdefs.ErrInvalid},
		{"negative disk", cpapi.SandboxRequest{Resources: &cpapi.Resources{DiskMB: -1}}, sandboxes.CreateOptions{}, errdefs.ErrInvalid},
		{"negative timeout", cpapi.SandboxRequest{TimeoutS: -1}, sandboxes.CreateOptions{}, errdefs.ErrInvalid},
		{"timeout over max", cpapi.SandboxRequest{TimeoutS: 3601}, sandboxes.CreateOptions{}, errdefs.ErrInvalid},
		{"env name with =", cpapi.SandboxRequest{Env: map[string]string{"A=B": "x"}}, sandboxes.CreateOptions{}, errdefs.ErrInvalid},
		{"env name with digit first", cpapi.SandboxRequest{Env: map[string]string{"1A": "x"}}, sandboxes.CreateOptions{}, errdefs.ErrInvalid},
		{"env name empty", cpapi.SandboxRequest{Env: map[string]string{"": "x"}}, sandboxes.CreateOptions{}, errdefs.ErrInvalid},
		{"env sandbox token", cpapi.SandboxRequest{Env: map[string]string{runtime.TokenEnv: "x"}}, sandboxes.CreateOptions{}, errdefs.ErrInvalid},
		{"env value with NUL", cpapi.SandboxRequest{Env: map[string]string{"A": "x\x00y"}}, sandboxes.CreateOptions{}, errdefs.ErrInvalid},
		{"reserved label", cpapi.SandboxRequest{Labels: map[string]string{"corral.job": "j"}}, sandboxes.CreateOptions{}, errdefs.ErrInvalid},
		{"long label key", cpapi.SandboxRequest{Labels: map[string]string{strings.Repeat("k", 64): "v"}}, sandboxes.CreateOptions{}, errdefs.ErrInvalid},
		{"too many labels", cpapi.SandboxRequest{Labels: many}, sandboxes.CreateOptions{}, errdefs.ErrInvalid},
		{"template with space", cpapi.SandboxRequest{Template: "a b"}, sandboxes.CreateOptions{}, errdefs.ErrInvalid},
		{"long job id", cpapi.SandboxRequest{}, sandboxes.CreateOptions{JobID: strings.Repeat("j", 300)}, errdefs.ErrInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sb, err := e.Service.Create(testCtx(t), tn, tt.req, tt.opts)
			if !errors.Is(err, tt.want) {
				t.Fatalf("Create(%+v) = %+v, %v; want %v", tt.req, sb, err, tt.want)
			}
		})
	}
	_, err := e.Service.Create(testCtx(t), tn, cpapi.SandboxRequest{Runtime: "kvm"}, sandboxes.CreateOptions{})
	if err == nil || !strings.Contains(err.Error(), "available: bwrap") {
		t.Errorf("unknown runtime error = %v; want it to list the available runtimes", err)
	}
	if list, err := e.Service.List(testCtx(t), tn); err != nil || len(list.Sandboxes) != 0 {
		t.Errorf("List after refused creates = %+v, %v; want no records", list, err)
	}
}

func TestCreateFailureLeavesNothing(t *testing.T) {
	e := sandboxestest.New(t, sandboxes.Options{})
	tn := e.Tenant(t, "acme", 0)
	_, err := e.Service.Create(testCtx(t), tn, cpapi.SandboxRequest{Template: "no-such-template"}, sandboxes.CreateOptions{})
	if err == nil || !strings.Contains(err.Error(), "bwrap") {
		t.Fatalf("Create with a missing template = %v; want the runtime's error, wrapped", err)
	}
	if list, err := e.Service.List(testCtx(t), tn); err != nil || len(list.Sandboxes) != 0 {
		t.Errorf("List after a failed create = %+v, %v; want no record", list, err)
	}
	if all, err := e.Runtime.List(testCtx(t)); err != nil || len(all) != 0 {
		t.Errorf("runtime List after a failed create = %d sandboxes, %v; want none", len(all), err)
	}
}

func TestTenantQuota(t *testing.T) {
	e := sandboxestest.New(t, sandboxes.Options{})
	tn := e.Tenant(t, "small", 1)
	sb := create(t, e, tn, cpapi.SandboxRequest{}, sandboxes.CreateOptions{})
	if _, err := e.Service.Create(testCtx(t), tn, cpapi.SandboxRequest{}, sandboxes.CreateOptions{}); !errors.Is(err, errdefs.ErrRateLimited) {
		t.Fatalf("second Create over max_sandboxes=1 = %v; want rate limited", err)
	}
	if all, _ := e.Runtime.List(testCtx(t)); len(all) != 1 {
		t.Errorf("runtime holds %d sandboxes after a refused create; want 1", len(all))
	}
	if err := e.Service.Delete(testCtx(t), tn, sb.ID); err != nil {
		t.Fatal(err)
	}
	create(t, e, tn, cpapi.SandboxRequest{}, sandboxes.CreateOptions{})
}

func TestExtend(t *testing.T) {
	e := sandboxestest.New(t, sandboxes.Options{MaxTimeout: 2 * time.Hour})
	tn := e.Tenant(t, "acme", 0)
	sb := create(t, e, tn, cpapi.SandboxRequest{TimeoutS: 60}, sandboxes.CreateOptions{})
	got, err := e.Service.Extend(testCtx(t), tn, sb.ID, 3600)
	if err != nil {
		t.Fatalf("Extend = %v", err)
	}
	if want := e.Clock.Now().Add(time.Hour); got.ExpiresAt == nil || got.ExpiresAt.Sub(want).Abs() > 5*time.Second {
		t.Errorf("Extend(3600).ExpiresAt = %v; want about %v", got.ExpiresAt, want)
	}
	if again, _ := e.Service.Get(testCtx(t), tn, sb.ID); again == nil || !again.ExpiresAt.Equal(*got.ExpiresAt) {
		t.Errorf("Get after Extend = %+v; want ExpiresAt %v", again, got.ExpiresAt)
	}
	for _, s := range []int64{0, -1, 7201} {
		if _, err := e.Service.Extend(testCtx(t), tn, sb.ID, s); !errors.Is(err, errdefs.ErrInvalid) {
			t.Errorf("Extend(%d) = %v; want invalid", s, err)
		}
	}
	if _, err := e.Service.Extend(testCtx(t), tn, "sb_nope", 60); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("Extend of an unknown sandbox = %v; want not found", err)
	}
}

func TestAlive(t *testing.T) {
	e := sandboxestest.New(t, sandboxes.Options{})
	tn := e.Tenant(t, "acme", 0)
	sb := create(t, e, tn, cpapi.SandboxRequest{}, sandboxes.CreateOptions{JobID: "job_1"})
	if sb.Labels[sandboxes.LabelJob] != "job_1" {
		t.Errorf("labels = %v; want corral.job=job_1", sb.Labels)
	}
	if err := e.Service.Alive(testCtx(t), tn, sb.ID); err != nil {
		t.Fatalf("Alive = %v", err)
	}
	// Killed behind the service's back: the heartbeat notices.
	if err := e.Runtime.Delete(testCtx(t), sb.ID); err != nil {
		t.Fatal(err)
	}
	if err := e.Service.Alive(testCtx(t), tn, sb.ID); !errors.Is(err, errdefs.ErrBadGateway) {
		t.Errorf("Alive of a killed sandbox = %v; want bad gateway", err)
	}
}
