package controlplane

import (
	"net/http"

	"github.com/corral-sh/corral/api/cpapi"
	"github.com/corral-sh/corral/internal/httpmw"
	"github.com/corral-sh/corral/internal/problem"
	"github.com/corral-sh/corral/internal/webui"
)

// route is one entry of the API: it drives both the ServeMux and the
// OpenAPI document (openapi.go), so the two cannot drift apart.
type route struct {
	method, path string // path in OpenAPI form, "/v1/jobs/{id}"
	summary      string
	public       bool   // served without a token
	in           any    // JSON request body type, nil for none
	out          any    // JSON body of the success response, nil for none
	status       int    // success status
	also         int    // a second success status with the same body (201 created / 200 replaced), 0 for none
	media        string // success media type when not JSON: event-stream, zip, ...
	pattern      string // ServeMux pattern when it differs from "METHOD path"
	h            problem.HandlerFunc
}

// Media types of non-JSON responses.
const (
	mediaSSE   = "text/event-stream"
	mediaZip   = "application/zip"
	mediaPatch = "text/x-diff"
	mediaText  = "text/plain"
	mediaAny   = "*/*"
)

// table is the whole control plane API (DESIGN.md §3) in one list.
func (s *Server) table() []route {
	return []route{
		{method: "GET", path: "/healthz", summary: "Liveness", public: true, out: health{}, status: 200, h: s.healthz},
		{method: "GET", path: "/readyz", summary: "Readiness: the store answers", public: true, out: health{}, status: 200, h: s.readyz},
		{method: "GET", path: "/metrics", summary: "Prometheus metrics", public: true, status: 200, media: mediaText, h: s.metricsHandler},
		{method: "GET", path: "/openapi.json", summary: "This document", public: true, status: 200, media: "application/json", h: s.openapiHandler},

		{method: "POST", path: "/v1/jobs", summary: "Submit a job", in: cpapi.JobRequest{}, out: cpapi.Job{}, status: 201, h: s.createJob},
		{method: "GET", path: "/v1/jobs", summary: "List jobs, newest first (?status=, ?cursor=, ?limit=)", out: cpapi.JobList{}, status: 200, h: s.listJobs},
		{method: "GET", path: "/v1/jobs/{id}", summary: "One job", out: cpapi.Job{}, status: 200, h: s.getJob},
		{method: "POST", path: "/v1/jobs/{id}/cancel", summary: "Cancel a job; its sandbox is removed", out: cpapi.Job{}, status: 202, h: s.cancelJob},
		{method: "POST", path: "/v1/jobs/{id}/messages", summary: "Send a message to the running agent", in: cpapi.MessageRequest{}, status: 202, h: s.sendMessage},
		{method: "GET", path: "/v1/jobs/{id}/events", summary: "The job's event log: SSE (Last-Event-ID or ?after= resumes; ends after the final state), or a JSON page with Accept: application/json", out: cpapi.EventPage{}, status: 200, media: mediaSSE, h: s.jobEvents},
		{method: "GET", path: "/v1/jobs/{id}/artifacts", summary: "Artifacts zip: workspace, changes.patch, events.jsonl", status: 200, media: mediaZip, h: s.jobArtifacts},
		{method: "GET", path: "/v1/jobs/{id}/diff", summary: "The job's changes as a unified diff", status: 200, media: mediaPatch, h: s.jobDiff},
		{method: "GET", path: "/v1/events", summary: "SSE of all the tenant's job state changes", status: 200, media: mediaSSE, h: s.tenantEvents},

		{method: "POST", path: "/schedule", summary: "Submit a task (seed-001 form)", in: cpapi.ScheduleRequest{}, out: cpapi.ScheduleResponse{}, status: 201, h: s.schedule},
		{method: "GET", path: "/status/{id}", summary: "Coarse job status and download URL (seed-001 form)", out: cpapi.StatusResponse{}, status: 200, h: s.status},

		{method: "POST", path: "/v1/sandboxes", summary: "Create a sandbox", in: cpapi.SandboxRequest{}, out: cpapi.Sandbox{}, status: 201, h: s.createSandbox},
		{method: "GET", path: "/v1/sandboxes", summary: "List sandboxes", out: cpapi.SandboxList{}, status: 200, h: s.listSandboxes},
		{method: "GET", path: "/v1/sandboxes/{id}", summary: "One sandbox", out: cpapi.Sandbox{}, status: 200, h: s.getSandbox},
		{method: "DELETE", path: "/v1/sandboxes/{id}", summary: "Delete a sandbox", status: 204, h: s.deleteSandbox},
		{method: "POST", path: "/v1/sandboxes/{id}/timeout", summary: "Extend a sandbox: it lives timeout_s from now", in: cpapi.TimeoutRequest{}, out: cpapi.Sandbox{}, status: 200, h: s.extendSandbox},
		{method: "ANY", path: "/v1/sandboxes/{id}/{route}", pattern: "/v1/sandboxes/{id}/{route...}",
			summary: "Any sandboxd route (DESIGN.md §2), proxied: HTTP, SSE and WebSocket", status: 200, media: mediaAny, h: s.proxySandbox},

		{method: "POST", path: "/v1/tokens", summary: "Create a token (its secret is shown once)", in: cpapi.TokenRequest{}, out: cpapi.Token{}, status: 201, h: s.createToken},
		{method: "GET", path: "/v1/tokens", summary: "List the tenant's tokens", out: cpapi.TokenList{}, status: 200, h: s.listTokens},
		{method: "DELETE", path: "/v1/tokens/{id}", summary: "Revoke a token", status: 204, h: s.revokeToken},

		{method: "GET", path: "/v1/tenants", summary: "List the tenants and their limits (admin)", out: cpapi.TenantList{}, status: 200, h: s.listTenants},
		{method: "GET", path: "/v1/tenants/{id}", summary: "One tenant and its limits (an admin's, or the caller's own)", out: cpapi.Tenant{}, status: 200, h: s.getTenant},
		{method: "PATCH", path: "/v1/tenants/{id}", summary: "Change a tenant's limits (admin): an absent limit is kept, 0 lifts it", in: cpapi.TenantLimits{}, out: cpapi.Tenant{}, status: 200, h: s.setTenantLimits},

		{method: "PUT", path: "/v1/secrets/{name}", summary: "Create (201) or replace (200) a secret; its value is never returned", in: cpapi.SecretRequest{}, out: cpapi.Secret{}, status: 201, also: 200, h: s.putSecret},
		{method: "GET", path: "/v1/secrets", summary: "List the tenant's secrets: names and times, never values", out: cpapi.SecretList{}, status: 200, h: s.listSecrets},
		{method: "DELETE", path: "/v1/secrets/{name}", summary: "Delete a secret", status: 204, h: s.deleteSecret},
	}
}

// muxPattern is the ServeMux pattern of r.
func (r route) muxPattern() string {
	if r.pattern != "" {
		if r.method == "ANY" {
			return r.pattern
		}
		return r.method + " " + r.pattern
	}
	return r.method + " " + r.path
}

// health is the body of /healthz and /readyz.
type health struct {
	Status  string `json:"status"`
	Version string `json:"version"`
}

// routes builds the handler. Public routes are served as they are; every
// other route goes through authentication first. Outermost first:
//
//	httpmw.Recover          a panic becomes a 500 problem
//	httpmw.Observe          request log line and metrics, by route pattern
//	auth.Middleware         per protected route: bearer token → tenant, rate limit
func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	for _, rt := range s.table() {
		var h http.Handler = rt.h
		if !rt.public {
			h = s.auth.Middleware(h)
		}
		mux.Handle(rt.muxPattern(), h)
	}
	// The web UI (internal/webui) at /: its page, assets and client-side
	// routes, outside the API table and its token (the page asks for one).
	webui.New().Register(mux)
	var h http.Handler = httpmw.ProblemFallback(mux)
	h = httpmw.Observe(s.log, s.metrics)(h)
	h = httpmw.Recover(h)
	return h
}
