package controlplane_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"

	"github.com/corral-sh/corral/api/cpapi"
	"github.com/corral-sh/corral/internal/auth"
	"github.com/corral-sh/corral/internal/controlplane/controlplanetest"
	"github.com/corral-sh/corral/internal/problem"
)

// api calls a real control plane and validates every response against
// the server's own OpenAPI document.
type api struct {
	t      *testing.T
	srv    *controlplanetest.Server
	token  string
	router routers.Router
}

func newAPI(t *testing.T) *api {
	t.Helper()
	return apiFor(t, controlplanetest.Start(t, controlplanetest.Options{}))
}

// apiFor wraps a running server.
func apiFor(t *testing.T, srv *controlplanetest.Server) *api {
	t.Helper()
	resp, err := http.Get(srv.URL + "/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	doc, err := openapi3.NewLoader().LoadFromIoReader(resp.Body)
	if err != nil {
		t.Fatalf("/openapi.json: %v", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("the OpenAPI document is invalid: %v", err)
	}
	doc.Servers = openapi3.Servers{{URL: srv.URL}}
	router, err := legacy.NewRouter(doc)
	if err != nil {
		t.Fatal(err)
	}
	return &api{t: t, srv: srv, token: srv.Token, router: router}
}

// as returns a copy of a that sends token.
func (a *api) as(token string) *api {
	b := *a
	b.token = token
	return &b
}

func (a *api) do(method, path string, body any, hdr ...string) (*http.Response, []byte) {
	a.t.Helper()
	var raw []byte
	switch b := body.(type) {
	case nil:
	case string:
		raw = []byte(b)
	case []byte:
		raw = b
	default:
		raw, _ = json.Marshal(b)
	}
	req, _ := http.NewRequest(method, a.srv.URL+path, bytes.NewReader(raw))
	if a.token != "" {
		req.Header.Set("Authorization", "Bearer "+a.token)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		a.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	a.validate(req, raw, resp, data)
	return resp, data
}

// validate checks a JSON response against the document: the route must be
// documented and the body must match the schema for its status.
func (a *api) validate(req *http.Request, reqBody []byte, resp *http.Response, body []byte) {
	a.t.Helper()
	if !strings.Contains(resp.Header.Get("Content-Type"), "json") {
		return
	}
	vreq := req.Clone(context.Background())
	vreq.Body = io.NopCloser(bytes.NewReader(reqBody))
	route, params, err := a.router.FindRoute(vreq)
	if err != nil {
		if resp.StatusCode == 404 || resp.StatusCode == 405 {
			return // the server agrees there is no such route
		}
		a.t.Errorf("%s %s → %d is not in /openapi.json: %v", req.Method, req.URL.Path, resp.StatusCode, err)
		return
	}
	in := &openapi3filter.RequestValidationInput{Request: vreq, PathParams: params, Route: route,
		Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc}}
	out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: resp.StatusCode,
		Header: resp.Header, Body: io.NopCloser(bytes.NewReader(body))}
	if err := openapi3filter.ValidateResponse(context.Background(), out); err != nil {
		a.t.Errorf("%s %s → %d does not match /openapi.json: %v\nbody: %s", req.Method, req.URL.Path, resp.StatusCode, err, body)
	}
}

func decode[T any](t *testing.T, b []byte) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("decode %T from %s: %v", v, b, err)
	}
	return v
}

func (a *api) submit(req cpapi.JobRequest) cpapi.Job {
	a.t.Helper()
	if req.Template == "" {
		req.Template = a.srv.Template
	}
	resp, body := a.do("POST", "/v1/jobs", req)
	if resp.StatusCode != 201 {
		a.t.Fatalf("submit: %d %s", resp.StatusCode, body)
	}
	return decode[cpapi.Job](a.t, body)
}

func (a *api) waitJob(id string, final ...string) cpapi.Job {
	a.t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		_, body := a.do("GET", "/v1/jobs/"+id, nil)
		j := decode[cpapi.Job](a.t, body)
		for _, f := range final {
			if j.Status == f {
				return j
			}
		}
		if time.Now().After(deadline) {
			a.t.Fatalf("job %s stuck in %s", id, j.Status)
		}
		time.Sleep(25 * time.Millisecond)
	}
}

func (a *api) events(id string) []cpapi.Event {
	a.t.Helper()
	_, body := a.do("GET", "/v1/jobs/"+id+"/events?limit=1000", nil, "Accept", "application/json")
	return decode[cpapi.EventPage](a.t, body).Events
}

func outputOf(evs []cpapi.Event) string {
	var b strings.Builder
	for _, e := range evs {
		if e.Type == cpapi.EventProcessOutput {
			var o cpapi.OutputData
			_ = json.Unmarshal(e.Data, &o)
			b.WriteString(o.Data)
		}
	}
	return b.String()
}

func TestJobLifecycleOverHTTP(t *testing.T) {
	a := newAPI(t)
	j := a.submit(cpapi.JobRequest{Task: "say hello", Agent: "script", Command: "echo hello; echo made > out.txt", Labels: map[string]string{"team": "a"}})
	if j.Status != cpapi.JobPending || j.Labels["team"] != "a" {
		t.Errorf("submitted job = %+v", j)
	}
	done := a.waitJob(j.ID, cpapi.JobCompleted, cpapi.JobFailed)
	if done.Status != cpapi.JobCompleted || done.Result == nil || done.Result.ExitCode == nil || *done.Result.ExitCode != 0 ||
		done.StartedAt == nil || done.FinishedAt == nil || done.SandboxID == "" || done.Runtime != "bwrap" {
		t.Fatalf("finished job = %+v", done)
	}
	evs := a.events(j.ID)
	var states []string
	for i, e := range evs {
		if e.Seq != int64(i+1) {
			t.Errorf("event %d has seq %d; want gap-free from 1", i, e.Seq)
		}
		if e.Type == cpapi.EventJobState {
			states = append(states, decode[cpapi.StateData](t, e.Data).To)
		}
	}
	if got := strings.Join(states, ","); got != "pending,creating,running,completing,completed" {
		t.Errorf("states = %s", got)
	}
	if got := outputOf(evs); got != "hello\n" {
		t.Errorf("output = %q", got)
	}
	resp, zipBody := a.do("GET", "/v1/jobs/"+j.ID+"/artifacts", nil)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/zip" || !bytes.Contains(zipBody, []byte("events.jsonl")) || !bytes.Contains(zipBody, []byte("workspace/out.txt")) {
		t.Errorf("artifacts = %d %s, %d bytes", resp.StatusCode, resp.Header.Get("Content-Type"), len(zipBody))
	}
	_, body := a.do("GET", "/status/"+j.ID, nil)
	if st := decode[cpapi.StatusResponse](t, body); st.Status != "complete" || st.DownloadURL != "/v1/jobs/"+j.ID+"/artifacts" {
		t.Errorf("seed-001 status = %+v", st)
	}
	_, body = a.do("GET", "/v1/jobs?status=completed", nil)
	if list := decode[cpapi.JobList](t, body); len(list.Jobs) != 1 || list.Jobs[0].ID != j.ID {
		t.Errorf("list = %+v", list)
	}
	// A sandbox of a finished job is gone.
	if resp, _ := a.do("GET", "/v1/sandboxes/"+done.SandboxID, nil); resp.StatusCode != 404 {
		t.Errorf("sandbox of a finished job = %d; want 404", resp.StatusCode)
	}
}

func TestFailedAndCancelledJobs(t *testing.T) {
	a := newAPI(t)
	f := a.submit(cpapi.JobRequest{Agent: "script", Command: "echo oops >&2; exit 3"})
	got := a.waitJob(f.ID, cpapi.JobCompleted, cpapi.JobFailed)
	if got.Status != cpapi.JobFailed || got.Result == nil || got.Result.ExitCode == nil || *got.Result.ExitCode != 3 {
		t.Errorf("failing job = %+v", got)
	}
	c := a.submit(cpapi.JobRequest{Agent: "script", Command: "echo started; sleep 60"})
	a.waitJob(c.ID, cpapi.JobRunning)
	resp, body := a.do("POST", "/v1/jobs/"+c.ID+"/cancel", nil)
	if resp.StatusCode != 202 {
		t.Fatalf("cancel = %d %s", resp.StatusCode, body)
	}
	got = a.waitJob(c.ID, cpapi.JobCancelled)
	if resp, _ := a.do("POST", "/v1/jobs/"+c.ID+"/cancel", nil); resp.StatusCode != 409 {
		t.Errorf("cancelling a cancelled job = %d; want 409", resp.StatusCode)
	}
	if got.SandboxID != "" { // removal follows the cancel (202: accepted)
		deadline := time.Now().Add(30 * time.Second)
		for {
			resp, _ := a.do("GET", "/v1/sandboxes/"+got.SandboxID, nil)
			if resp.StatusCode == 404 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the cancelled job's sandbox still exists (%d)", resp.StatusCode)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	to := a.submit(cpapi.JobRequest{Agent: "script", Command: "sleep 60", TimeoutS: 1})
	if got := a.waitJob(to.ID, cpapi.JobFailed, cpapi.JobCompleted); got.StatusReason != cpapi.ReasonTimeout {
		t.Errorf("timed-out job = %+v; want failed: timeout", got)
	}
}

func TestSandboxesAndProxy(t *testing.T) {
	a := newAPI(t)
	resp, body := a.do("POST", "/v1/sandboxes", cpapi.SandboxRequest{Template: a.srv.Template, TimeoutS: 600, Labels: map[string]string{"k": "v"}})
	if resp.StatusCode != 201 {
		t.Fatalf("create sandbox: %d %s", resp.StatusCode, body)
	}
	sb := decode[cpapi.Sandbox](t, body)
	if sb.Status != "running" || sb.ExpiresAt == nil || sb.Labels["k"] != "v" {
		t.Errorf("sandbox = %+v", sb)
	}
	resp, body = a.do("POST", "/v1/sandboxes/"+sb.ID+"/exec", `{"command":"id -u","shell":true}`)
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"stdout":"1000\n"`) {
		t.Errorf("exec through the proxy = %d %s", resp.StatusCode, body)
	}
	resp, body = a.do("POST", "/v1/sandboxes/"+sb.ID+"/timeout", `{"timeout_s":1200}`)
	if ext := decode[cpapi.Sandbox](t, body); resp.StatusCode != 200 || !ext.ExpiresAt.After(*sb.ExpiresAt) {
		t.Errorf("extend = %d %+v", resp.StatusCode, ext)
	}
	_, body = a.do("GET", "/v1/sandboxes", nil)
	if list := decode[cpapi.SandboxList](t, body); len(list.Sandboxes) != 1 {
		t.Errorf("sandboxes = %+v", list)
	}
	if resp, _ := a.do("DELETE", "/v1/sandboxes/"+sb.ID, nil); resp.StatusCode != 204 {
		t.Errorf("delete = %d", resp.StatusCode)
	}
	if resp, _ := a.do("POST", "/v1/sandboxes/"+sb.ID+"/exec", `{"command":"true"}`); resp.StatusCode != 404 {
		t.Errorf("exec in a deleted sandbox = %d; want 404", resp.StatusCode)
	}
}

func TestTenantIsolation(t *testing.T) {
	a := newAPI(t)
	resp, body := a.do("POST", "/v1/tokens", cpapi.TokenRequest{Name: "other", Tenant: "other"})
	if resp.StatusCode != 201 {
		t.Fatalf("create token: %d %s", resp.StatusCode, body)
	}
	b := a.as(decode[cpapi.Token](t, body).Secret)
	j := a.submit(cpapi.JobRequest{Agent: "script", Command: "true"})
	_, body = a.do("POST", "/v1/sandboxes", cpapi.SandboxRequest{Template: a.srv.Template})
	sb := decode[cpapi.Sandbox](t, body)
	for _, path := range []string{"/v1/jobs/" + j.ID, "/v1/jobs/" + j.ID + "/events", "/v1/jobs/" + j.ID + "/artifacts",
		"/status/" + j.ID, "/v1/sandboxes/" + sb.ID, "/v1/sandboxes/" + sb.ID + "/processes"} {
		if resp, body := b.do("GET", path, nil, "Accept", "application/json"); resp.StatusCode != 404 {
			t.Errorf("other tenant GET %s = %d %s; want 404", path, resp.StatusCode, body)
		}
	}
	if resp, _ := b.do("POST", "/v1/jobs/"+j.ID+"/cancel", nil); resp.StatusCode != 404 {
		t.Errorf("other tenant cancel = %d; want 404", resp.StatusCode)
	}
	if resp, _ := b.do("DELETE", "/v1/sandboxes/"+sb.ID, nil); resp.StatusCode != 404 {
		t.Errorf("other tenant delete sandbox = %d; want 404", resp.StatusCode)
	}
	_, body = b.do("GET", "/v1/jobs", nil)
	if list := decode[cpapi.JobList](t, body); len(list.Jobs) != 0 {
		t.Errorf("other tenant lists %d jobs; want 0", len(list.Jobs))
	}
	_, body = b.do("GET", "/v1/sandboxes", nil)
	if list := decode[cpapi.SandboxList](t, body); len(list.Sandboxes) != 0 {
		t.Errorf("other tenant lists %d sandboxes; want 0", len(list.Sandboxes))
	}
	if resp, _ := b.do("POST", "/v1/tokens", cpapi.TokenRequest{Name: "x", Admin: true}); resp.StatusCode != 403 {
		t.Errorf("non-admin minting an admin token = %d; want 403", resp.StatusCode)
	}
}

func TestBadRequests(t *testing.T) {
	a := newAPI(t)
	tests := []struct {
		name, method, path string
		body               any
		token              string
		want               int
	}{
		{"no token", "GET", "/v1/jobs", nil, "-", 401},
		{"wrong token", "GET", "/v1/jobs", nil, "crl_nope_nope_nope_nope", 401},
		{"empty body", "POST", "/v1/jobs", "", "", 400},
		{"malformed", "POST", "/v1/jobs", `{"task":`, "", 400},
		{"unknown field", "POST", "/v1/jobs", `{"task":"x","bogus":1}`, "", 400},
		{"wrong type", "POST", "/v1/jobs", `{"task":5}`, "", 400},
		{"invalid UTF-8", "POST", "/v1/jobs", []byte("{\"task\":\"\xff\"}"), "", 400},
		{"huge body", "POST", "/v1/jobs", `{"task":"` + strings.Repeat("a", 2<<20) + `"}`, "", 413},
		{"script without command", "POST", "/v1/jobs", `{"agent":"script"}`, "", 400},
		{"unknown agent", "POST", "/v1/jobs", `{"task":"x","agent":"nope"}`, "", 400},
		{"bad network", "POST", "/v1/jobs", `{"agent":"script","command":"true","network":"internet"}`, "", 400},
		{"unknown job", "GET", "/v1/jobs/job_nope", nil, "", 404},
		{"bad id chars", "GET", "/v1/jobs/..%2F..%2Fetc", nil, "", 404},
		{"bad cursor", "GET", "/v1/jobs?cursor=@@@", nil, "", 400},
		{"bad limit", "GET", "/v1/jobs?limit=0", nil, "", 400},
		{"bad after", "GET", "/v1/jobs/job_nope/events?after=x", nil, "", 404},
		{"unknown sandbox", "GET", "/v1/sandboxes/sb_nope", nil, "", 404},
		{"proxy to unknown sandbox", "GET", "/v1/sandboxes/sb_nope/processes", nil, "", 404},
		{"bad sandbox runtime", "POST", "/v1/sandboxes", `{"runtime":"vmware"}`, "", 422},
		{"missing template", "POST", "/v1/sandboxes", `{"template":"corral-nope"}`, "", 422},
		{"negative timeout", "POST", "/v1/sandboxes", `{"timeout_s":-1}`, "", 400},
		{"method not allowed", "PUT", "/v1/jobs", `{}`, "", 405},
		{"no route", "GET", "/v2/nothing", nil, "", 404},
		{"token without name", "POST", "/v1/tokens", `{}`, "", 400},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := a
			switch tt.token {
			case "-":
				c = a.as("")
			case "":
			default:
				c = a.as(tt.token)
			}
			resp, body := c.do(tt.method, tt.path, tt.body)
			if resp.StatusCode != tt.want {
				t.Fatalf("%s %s = %d %s; want %d", tt.method, tt.path, resp.StatusCode, body, tt.want)
			}
			if ct := resp.Header.Get("Content-Type"); ct != problem.ContentType {
				t.Errorf("Content-Type = %q; want problem+json", ct)
			}
		})
	}
}

// TestEventsSSEResume reads a job's SSE stream, drops it after a few
// events, resumes with Last-Event-ID, and checks the union has every event
// exactly once, ending after the final state.
func TestEventsSSEResume(t *testing.T) {
	a := newAPI(t)
	j := a.submit(cpapi.JobRequest{Agent: "script", Command: "for i in $(seq 1 30); do echo line-$i; sleep 0.02; done"})
	read := func(lastID string, max int) (ids []string) {
		req, _ := http.NewRequest("GET", a.srv.URL+"/v1/jobs/"+j.ID+"/events", nil)
		req.Header.Set("Authorization", "Bearer "+a.token)
		if lastID != "" {
			req.Header.Set("Last-Event-ID", lastID)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.Header.Get("Content-Type") != "text/event-stream" {
			t.Fatalf("Content-Type = %s", resp.Header.Get("Content-Type"))
		}
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() && (max == 0 || len(ids) < max) {
			if v, ok := strings.CutPrefix(sc.Text(), "id: "); ok {
				ids = append(ids, v)
			}
		}
		return ids
	}
	first := read("", 4)
	rest := read(first[len(first)-1], 0) // ends by itself after the final state
	all := append(first, rest...)
	for i, id := range all {
		if id != fmt.Sprint(i+1) {
			t.Fatalf("event ids = %v; want 1..%d with no gap or duplicate", all, len(all))
		}
	}
	evs := a.events(j.ID)
	if len(all) != len(evs) || !strings.Contains(outputOf(evs), "line-30\n") {
		t.Errorf("streamed %d events, the log has %d", len(all), len(evs))
	}
	// Resuming a finished job at its last event ends at once, empty.
	done := make(chan []string, 1)
	go func() { done <- read(all[len(all)-1], 0) }()
	select {
	case ids := <-done:
		if len(ids) != 0 {
			t.Errorf("resume past the end gave events %v", ids)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("resuming a finished job past its last event hangs")
	}
}

func TestPublicRoutes(t *testing.T) {
	a := newAPI(t).as("")
	for _, path := range []string{"/healthz", "/readyz", "/openapi.json", "/metrics"} {
		if resp, body := a.do("GET", path, nil); resp.StatusCode != 200 {
			t.Errorf("GET %s = %d %s", path, resp.StatusCode, body)
		}
	}
	_, body := a.do("GET", "/metrics", nil)
	if !strings.Contains(string(body), "corral_http_requests_total") {
		t.Errorf("metrics lack corral_http_requests_total")
	}
}

// TestDockerJobs runs the job life cycle on the Docker runtime: a job
// completes with its artifacts, and one whose sandbox is removed from
// outside fails sandbox_lost.
func TestDockerJobs(t *testing.T) {
	a := apiFor(t, controlplanetest.Start(t, controlplanetest.Options{Runtime: "docker"}))
	j := a.submit(cpapi.JobRequest{Agent: "script", Command: "echo from docker; echo data > result.txt"})
	done := a.waitJob(j.ID, cpapi.JobCompleted, cpapi.JobFailed)
	if done.Status != cpapi.JobCompleted || done.Runtime != "docker" || outputOf(a.events(j.ID)) != "from docker\n" {
		t.Fatalf("docker job = %+v", done)
	}
	resp, zipBody := a.do("GET", "/v1/jobs/"+j.ID+"/artifacts", nil)
	if resp.StatusCode != 200 || !bytes.Contains(zipBody, []byte("workspace/result.txt")) {
		t.Errorf("docker job artifacts = %d, %d bytes", resp.StatusCode, len(zipBody))
	}
	lost := a.submit(cpapi.JobRequest{Agent: "script", Command: "echo up; sleep 120"})
	running := a.waitJob(lost.ID, cpapi.JobRunning)
	for running.SandboxID == "" {
		running = a.waitJob(lost.ID, cpapi.JobRunning)
	}
	killContainer(t, "corral-"+running.SandboxID)
	if got := a.waitJob(lost.ID, cpapi.JobFailed, cpapi.JobCompleted); got.StatusReason != cpapi.ReasonSandboxLost {
		t.Errorf("job whose sandbox was killed = %+v; want failed: sandbox_lost", got)
	}
}

// killContainer removes a container behind Corral's back, as an operator
// or an OOM-happy host would.
func killContainer(t *testing.T, name string) {
	t.Helper()
	out, err := exec.Command("docker", "rm", "-f", name).CombinedOutput()
	if err != nil {
		t.Fatalf("docker rm -f %s: %v: %s", name, err, out)
	}
}

// TestTenantQuota: a tenant at its sandbox limit is refused (429) until it
// frees one.
func TestTenantQuota(t *testing.T) {
	a := apiFor(t, controlplanetest.Start(t, controlplanetest.Options{TenantLimits: auth.TenantLimits{MaxSandboxes: 1}}))
	resp, body := a.do("POST", "/v1/sandboxes", cpapi.SandboxRequest{Template: a.srv.Template})
	if resp.StatusCode != 201 {
		t.Fatalf("first sandbox: %d %s", resp.StatusCode, body)
	}
	first := decode[cpapi.Sandbox](t, body)
	if resp, body := a.do("POST", "/v1/sandboxes", cpapi.SandboxRequest{Template: a.srv.Template}); resp.StatusCode != 429 {
		t.Fatalf("second sandbox over the quota: %d %s; want 429", resp.StatusCode, body)
	}
	a.do("DELETE", "/v1/sandboxes/"+first.ID, nil)
	if resp, body := a.do("POST", "/v1/sandboxes", cpapi.SandboxRequest{Template: a.srv.Template}); resp.StatusCode != 201 {
		t.Errorf("sandbox after freeing the quota: %d %s", resp.StatusCode, body)
	}
}
