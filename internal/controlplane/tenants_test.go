package controlplane_test

import (
	"strings"
	"testing"
	"time"

	"github.com/corral-sh/corral/api/cpapi"
)

// TestTenantAdmin: an admin lists tenants and changes their limits, which
// apply from the next sandbox or job on, without a restart; a tenant reads
// only its own; bad bodies are 400s that change nothing.
func TestTenantAdmin(t *testing.T) {
	a := newAPI(t)
	resp, body := a.do("POST", "/v1/tokens", cpapi.TokenRequest{Name: "acme-ci", Tenant: "acme"})
	if resp.StatusCode != 201 {
		t.Fatalf("create token: %d %s", resp.StatusCode, body)
	}
	b := a.as(decode[cpapi.Token](t, body).Secret)
	_, body = a.do("GET", "/v1/tokens", nil)
	adminTenant := decode[cpapi.TokenList](t, body).Tokens[0].Tenant

	// Who may do what.
	for _, c := range []struct {
		method, path string
		body         any
		want         int
	}{
		{"GET", "/v1/tenants", nil, 403},
		{"PATCH", "/v1/tenants/acme", `{"max_sandboxes":100}`, 403},
		{"GET", "/v1/tenants/" + adminTenant, nil, 404},
		{"GET", "/v1/tenants/acme", nil, 200},
	} {
		if resp, body := b.do(c.method, c.path, c.body); resp.StatusCode != c.want {
			t.Errorf("tenant %s %s = %d %s; want %d", c.method, c.path, resp.StatusCode, body, c.want)
		}
	}
	resp, body = a.do("GET", "/v1/tenants", nil)
	if list := decode[cpapi.TenantList](t, body); resp.StatusCode != 200 || !hasTenant(list, "acme") || !hasTenant(list, adminTenant) {
		t.Fatalf("admin GET /v1/tenants = %d %s; want acme and %s", resp.StatusCode, body, adminTenant)
	}

	// Bad bodies and an unknown tenant.
	for _, c := range []struct {
		path, body string
		want       int
	}{
		{"/v1/tenants/acme", `{}`, 400},
		{"/v1/tenants/acme", `{"max_sandboxes":-1}`, 400},
		{"/v1/tenants/acme", `{"max_sandboxes":"1"}`, 400},
		{"/v1/tenants/acme", `{"max_cpus":1}`, 400},
		{"/v1/tenants/acme", `{"max_sandboxes":1`, 400},
		{"/v1/tenants/nope", `{"max_sandboxes":1}`, 404},
	} {
		if resp, body := a.do("PATCH", c.path, c.body); resp.StatusCode != c.want || !strings.Contains(resp.Header.Get("Content-Type"), "problem+json") {
			t.Errorf("PATCH %s %s = %d %s; want %d problem+json", c.path, c.body, resp.StatusCode, body, c.want)
		}
	}
	if _, body := a.do("GET", "/v1/tenants/acme", nil); decode[cpapi.Tenant](t, body).MaxSandboxes != 0 {
		t.Errorf("after refused changes, acme = %s; want its limits untouched", body)
	}

	// A sandbox limit, applied at once and lifted again.
	resp, body = a.do("PATCH", "/v1/tenants/acme", `{"max_sandboxes":1}`)
	if got := decode[cpapi.Tenant](t, body); resp.StatusCode != 200 || got.MaxSandboxes != 1 || got.MaxConcurrentJobs != 0 {
		t.Fatalf("PATCH max_sandboxes 1 = %d %s", resp.StatusCode, body)
	}
	if resp, body := b.do("POST", "/v1/sandboxes", cpapi.SandboxRequest{Template: a.srv.Template}); resp.StatusCode != 201 {
		t.Fatalf("first sandbox: %d %s", resp.StatusCode, body)
	}
	if resp, body := b.do("POST", "/v1/sandboxes", cpapi.SandboxRequest{Template: a.srv.Template}); resp.StatusCode != 429 {
		t.Fatalf("second sandbox over the new limit: %d %s; want 429", resp.StatusCode, body)
	}
	a.do("PATCH", "/v1/tenants/acme", `{"max_sandboxes":0}`)
	if resp, body := b.do("POST", "/v1/sandboxes", cpapi.SandboxRequest{Template: a.srv.Template}); resp.StatusCode != 201 {
		t.Fatalf("second sandbox once the limit is lifted: %d %s", resp.StatusCode, body)
	}

	// A job limit: the second job waits while the first runs.
	resp, body = a.do("PATCH", "/v1/tenants/acme", `{"max_concurrent_jobs":1}`)
	if got := decode[cpapi.Tenant](t, body); resp.StatusCode != 200 || got.MaxConcurrentJobs != 1 || got.MaxSandboxes != 0 {
		t.Fatalf("PATCH max_concurrent_jobs 1 = %d %s", resp.StatusCode, body)
	}
	first := b.submit(cpapi.JobRequest{Agent: cpapi.AgentScript, Command: "sleep 120"})
	b.waitJob(first.ID, cpapi.JobRunning)
	second := b.submit(cpapi.JobRequest{Agent: cpapi.AgentScript, Command: "true"})
	for range 5 { // several of the dispatcher's polls
		time.Sleep(200 * time.Millisecond)
		if _, body := b.do("GET", "/v1/jobs/"+second.ID, nil); decode[cpapi.Job](t, body).Status != cpapi.JobPending {
			t.Fatalf("second job while the first runs: %s; want pending", body)
		}
	}
	b.do("POST", "/v1/jobs/"+first.ID+"/cancel", nil)
	if got := b.waitJob(second.ID, cpapi.JobCompleted, cpapi.JobFailed); got.Status != cpapi.JobCompleted {
		t.Errorf("second job after the first was cancelled: %+v", got)
	}
}

func hasTenant(l cpapi.TenantList, id string) bool {
	for _, t := range l.Tenants {
		if t.ID == id {
			return true
		}
	}
	return false
}
