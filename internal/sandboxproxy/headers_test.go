package sandboxproxy_test

import (
	"context"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/corral-sh/corral/api/cpapi"
	"github.com/corral-sh/corral/internal/errdefs"
	"github.com/corral-sh/corral/internal/problem"
	"github.com/corral-sh/corral/internal/runtime"
	"github.com/corral-sh/corral/internal/sandboxes"
	"github.com/corral-sh/corral/internal/store"
)

// stubRuntime hands out sandboxes whose "daemon" is whatever endpoint the
// test gives, so the test can see exactly what the proxy sends.
type stubRuntime struct {
	endpoint string
	mu       sync.Mutex
	sbs      map[string]*runtime.Sandbox
}

var _ runtime.Runtime = (*stubRuntime)(nil)

func (r *stubRuntime) Name() string { return "stub" }

func (r *stubRuntime) Create(_ context.Context, spec runtime.Spec) (*runtime.Sandbox, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	sb := &runtime.Sandbox{ID: spec.ID, Runtime: "stub", Status: runtime.StatusRunning,
		Endpoint: r.endpoint, Token: "sb-token-" + spec.ID, Labels: maps.Clone(spec.Labels)}
	r.sbs[spec.ID] = sb
	return sb, nil
}

func (r *stubRuntime) put(sb *runtime.Sandbox) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sbs[sb.ID] = sb
}

func (r *stubRuntime) Get(_ context.Context, id string) (*runtime.Sandbox, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if sb := r.sbs[id]; sb != nil {
		return sb, nil
	}
	return nil, errdefs.NotFoundf("sandbox %q not found", id)
}

func (r *stubRuntime) List(context.Context) ([]*runtime.Sandbox, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Collect(maps.Values(r.sbs)), nil
}

func (r *stubRuntime) Delete(_ context.Context, id string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.sbs, id)
	return nil
}

// seen is one request as the upstream received it.
type seen struct {
	method, path, rawPath, query string
	header                       http.Header
	body                         string
}

// recorder is an upstream that records requests and answers like a daemon.
func recorder(t *testing.T) (*httptest.Server, func() seen) {
	var mu sync.Mutex
	var last seen
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		last = seen{r.Method, r.URL.Path, r.URL.RawPath, r.URL.RawQuery, r.Header.Clone(), string(body)}
		mu.Unlock()
		if r.URL.Path == "/v1/conflict" {
			w.Header().Set("Content-Type", problem.ContentType)
			w.WriteHeader(http.StatusConflict)
			io.WriteString(w, `{"type":"about:blank","title":"Conflict","status":409,"detail":"from the daemon"}`)
			return
		}
		io.WriteString(w, "ok")
	}))
	t.Cleanup(srv.Close)
	return srv, func() seen { mu.Lock(); defer mu.Unlock(); return last }
}

func stubFixture(t *testing.T) (*fixture, *stubRuntime, func() seen) {
	up, last := recorder(t)
	stub := &stubRuntime{endpoint: up.URL, sbs: map[string]*runtime.Sandbox{}}
	f := newFixture(t, sandboxes.Options{Runtimes: map[string]runtime.Runtime{"stub": stub}, Default: "stub"})
	return f, stub, last
}

func do(t *testing.T, method, url string, header http.Header, body string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	maps.Copy(req.Header, header)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func TestWhatTheDaemonSees(t *testing.T) {
	f, _, last := stubFixture(t)
	sb, err := f.env.Service.Create(ctxFor(t), f.a, cpapi.SandboxRequest{}, sandboxes.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	base := f.srv.URL + "/v1/sandboxes/" + sb.ID
	tests := []struct {
		name   string
		method string
		url    string
		header http.Header
		want   seen
	}{
		{"header token", "POST", base + "/exec?x=1", http.Header{"Authorization": {"Bearer cp-a"}},
			seen{method: "POST", path: "/v1/exec", query: "x=1"}},
		{"access_token removed", "GET", base + "/events?a=1&access_token=cp-a&b=%2F", nil,
			seen{method: "GET", path: "/v1/events", query: "a=1&b=%2F"}},
		{"both, access_token first", "GET", base + "/fs/file?access_token=cp-a&path=%2Fw%20x", http.Header{"Authorization": {"Bearer cp-a"}},
			seen{method: "GET", path: "/v1/fs/file", query: "path=%2Fw%20x"}},
		{"escaped slash kept", "DELETE", base + "/processes/a%2Fb", http.Header{"Authorization": {"Bearer cp-a"}},
			seen{method: "DELETE", path: "/v1/processes/a/b", rawPath: "/v1/processes/a%2Fb"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := do(t, tt.method, tt.url, tt.header, "payload")
			got := last()
			if resp.StatusCode != 200 || body != "ok" {
				t.Fatalf("%s %s = %d %q; want 200 ok", tt.method, tt.url, resp.StatusCode, body)
			}
			if got.method != tt.want.method || got.path != tt.want.path || got.rawPath != tt.want.rawPath ||
				got.query != tt.want.query || got.body != "payload" {
				t.Errorf("daemon saw %s %s (raw %q) ?%s body %q; want %s %s (raw %q) ?%s body payload",
					got.method, got.path, got.rawPath, got.query, got.body, tt.want.method, tt.want.path, tt.want.rawPath, tt.want.query)
			}
			if a := got.header.Values("Authorization"); !slices.Equal(a, []string{"Bearer sb-token-" + sb.ID}) {
				t.Errorf("daemon saw Authorization %q; want only the sandbox's token", a)
			}
			for k, vs := range got.header {
				for _, v := range vs {
					if strings.Contains(v, "cp-a") {
						t.Errorf("daemon saw the control-plane token in %s: %q", k, v)
					}
				}
			}
		})
	}

	// The port proxy learns the prefix it is mounted under from outside.
	do(t, "GET", base+"/ports/3000/proxy/app/?access_token=cp-a", nil, "")
	if got := last(); got.header.Get("X-Forwarded-Prefix") != "/v1/sandboxes/"+sb.ID+"/ports/3000/proxy" || got.query != "" {
		t.Errorf("port proxy request: X-Forwarded-Prefix %q, query %q; want the outside prefix and no token",
			got.header.Get("X-Forwarded-Prefix"), got.query)
	}

	// The daemon's problem+json comes back untouched.
	resp, body := do(t, "POST", base+"/conflict", http.Header{"Authorization": {"Bearer cp-a"}}, "")
	if resp.StatusCode != http.StatusConflict || resp.Header.Get("Content-Type") != problem.ContentType ||
		body != `{"type":"about:blank","title":"Conflict","status":409,"detail":"from the daemon"}` {
		t.Errorf("daemon's problem = %d %q %s; want it passed through", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
}

func TestNotRunning(t *testing.T) {
	f, stub, _ := stubFixture(t)
	ctx := ctxFor(t)
	record := func(status string) string {
		id := runtime.NewID()
		if _, err := f.env.Store.CreateSandbox(ctx, store.Sandbox{ID: id, TenantID: f.a, Runtime: "stub", Status: status}); err != nil {
			t.Fatal(err)
		}
		return id
	}
	creating := record(sandboxes.StatusCreating)
	gone := record(sandboxes.StatusRunning)
	stopped := record(sandboxes.StatusRunning)
	stub.put(&runtime.Sandbox{ID: stopped, Status: runtime.StatusStopped, Endpoint: stub.endpoint})
	dead := record(sandboxes.StatusRunning)
	stub.put(&runtime.Sandbox{ID: dead, Status: runtime.StatusRunning, Token: "t",
		Endpoint: "unix:" + filepath.Join(t.TempDir(), "sandboxd.sock")})

	u := f.srv.URL + "/v1/sandboxes/"
	wantProblem(t, get(t, u+creating+"/health", "cp-a"), http.StatusConflict, "not running yet")
	wantProblem(t, get(t, u+gone+"/health", "cp-a"), http.StatusBadGateway, "no longer has it")
	wantProblem(t, get(t, u+stopped+"/health", "cp-a"), http.StatusBadGateway, "its daemon is not running")
	wantProblem(t, get(t, u+dead+"/health", "cp-a"), http.StatusBadGateway, "does not accept connections")
}
