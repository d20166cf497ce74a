package controlplane_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/corral-sh/corral/api/cpapi"
	"github.com/corral-sh/corral/internal/controlplane"
	"github.com/corral-sh/corral/internal/controlplane/controlplanetest"
	"github.com/corral-sh/corral/internal/problem"
	"github.com/corral-sh/corral/internal/runtime/runtimetest"
	"github.com/corral-sh/corral/internal/secrets"
)

// wantProblem fails unless the answer is a problem+json with status.
func wantProblem(t *testing.T, what string, resp *http.Response, body []byte, status int) problem.Details {
	t.Helper()
	if resp.StatusCode != status || resp.Header.Get("Content-Type") != problem.ContentType {
		t.Errorf("%s = %d %s %s; want %d problem+json", what, resp.StatusCode, resp.Header.Get("Content-Type"), body, status)
		return problem.Details{}
	}
	return decode[problem.Details](t, body)
}

func TestSecretsAPI(t *testing.T) {
	a := newAPI(t)
	const value = "ghp_secretsAPItestVALUE0123456789abcdef"

	resp, body := a.do("PUT", "/v1/secrets/GITHUB_TOKEN", cpapi.SecretRequest{Value: value})
	if resp.StatusCode != 201 {
		t.Fatalf("PUT new secret = %d %s; want 201", resp.StatusCode, body)
	}
	created := decode[cpapi.Secret](t, body)
	if created.Name != "GITHUB_TOKEN" || created.CreatedAt.IsZero() || !created.UpdatedAt.Equal(created.CreatedAt) {
		t.Errorf("PUT new secret = %+v; want GITHUB_TOKEN, created = updated", created)
	}
	if bytes.Contains(body, []byte(value)) || bytes.Contains(body, []byte(`"value"`)) {
		t.Errorf("PUT answered with the value: %s", body)
	}

	resp, body = a.do("PUT", "/v1/secrets/GITHUB_TOKEN", cpapi.SecretRequest{Value: value + "-rotated"})
	if resp.StatusCode != 200 {
		t.Fatalf("PUT existing secret = %d %s; want 200", resp.StatusCode, body)
	}
	replaced := decode[cpapi.Secret](t, body)
	if !replaced.CreatedAt.Equal(created.CreatedAt) || replaced.UpdatedAt.Before(created.UpdatedAt) {
		t.Errorf("PUT existing secret = %+v; want created_at %v kept, updated_at later", replaced, created.CreatedAt)
	}
	a.do("PUT", "/v1/secrets/_ANOTHER", cpapi.SecretRequest{Value: "x"})

	resp, body = a.do("GET", "/v1/secrets", nil)
	list := decode[cpapi.SecretList](t, body)
	if resp.StatusCode != 200 || len(list.Secrets) != 2 || list.Secrets[0].Name != "GITHUB_TOKEN" || list.Secrets[1].Name != "_ANOTHER" {
		t.Errorf("GET /v1/secrets = %d %s; want GITHUB_TOKEN and _ANOTHER", resp.StatusCode, body)
	}
	if bytes.Contains(body, []byte(value)) {
		t.Errorf("GET /v1/secrets shows a value: %s", body)
	}

	resp, body = a.do("DELETE", "/v1/secrets/_ANOTHER", nil)
	if resp.StatusCode != 204 || len(body) != 0 {
		t.Errorf("DELETE = %d %s; want 204", resp.StatusCode, body)
	}
	resp, body = a.do("DELETE", "/v1/secrets/_ANOTHER", nil)
	if d := wantProblem(t, "DELETE twice", resp, body, 404); d.Detail != `secret "_ANOTHER" not found` {
		t.Errorf("DELETE twice detail = %q", d.Detail)
	}
	if _, body = a.do("GET", "/v1/secrets", nil); len(decode[cpapi.SecretList](t, body).Secrets) != 1 {
		t.Errorf("GET after DELETE = %s; want one secret", body)
	}

	// An empty list is [], not null.
	other := otherTenant(t, a, "empty")
	if resp, body := other.do("GET", "/v1/secrets", nil); resp.StatusCode != 200 || !bytes.Contains(body, []byte(`"secrets":[]`)) {
		t.Errorf("GET /v1/secrets with none = %d %s; want an empty array", resp.StatusCode, body)
	}
}

// otherTenant is a for a new tenant, through an admin-made token.
func otherTenant(t *testing.T, a *api, tenant string) *api {
	t.Helper()
	resp, body := a.do("POST", "/v1/tokens", cpapi.TokenRequest{Name: tenant, Tenant: tenant})
	if resp.StatusCode != 201 {
		t.Fatalf("create token for %s = %d %s", tenant, resp.StatusCode, body)
	}
	return a.as(decode[cpapi.Token](t, body).Secret)
}

func TestSecretsTenantIsolation(t *testing.T) {
	a := newAPI(t)
	b := otherTenant(t, a, "other")
	if resp, body := a.do("PUT", "/v1/secrets/SHARED_NAME", cpapi.SecretRequest{Value: "admin's"}); resp.StatusCode != 201 {
		t.Fatalf("PUT = %d %s", resp.StatusCode, body)
	}
	resp, body := b.do("DELETE", "/v1/secrets/SHARED_NAME", nil)
	wantProblem(t, "another tenant's DELETE", resp, body, 404)
	if _, body := b.do("GET", "/v1/secrets", nil); len(decode[cpapi.SecretList](t, body).Secrets) != 0 {
		t.Errorf("another tenant lists %s; want none", body)
	}
	// The same name is the other tenant's own secret: created, not replaced.
	if resp, body := b.do("PUT", "/v1/secrets/SHARED_NAME", cpapi.SecretRequest{Value: "other's"}); resp.StatusCode != 201 {
		t.Errorf("another tenant's PUT of the same name = %d %s; want 201 (its own)", resp.StatusCode, body)
	}
	if resp, _ := a.do("DELETE", "/v1/secrets/SHARED_NAME", nil); resp.StatusCode != 204 {
		t.Errorf("owner's DELETE = %d; want 204", resp.StatusCode)
	}
	if _, body := b.do("GET", "/v1/secrets", nil); len(decode[cpapi.SecretList](t, body).Secrets) != 1 {
		t.Errorf("after the owner deleted its secret, the other tenant lists %s; want its own still", body)
	}
	if resp, body := a.as("").do("GET", "/v1/secrets", nil); resp.StatusCode != 401 {
		t.Errorf("GET /v1/secrets without a token = %d %s; want 401", resp.StatusCode, body)
	}
	if resp, body := a.as("crl_wrong").do("PUT", "/v1/secrets/X", cpapi.SecretRequest{Value: "v"}); resp.StatusCode != 401 {
		t.Errorf("PUT with a wrong token = %d %s; want 401", resp.StatusCode, body)
	}
}

func TestSecretsBadRequests(t *testing.T) {
	a := newAPI(t)
	big := strings.Repeat("v", secrets.MaxValueBytes+1)
	for _, tc := range []struct {
		name, path string
		body       any
		status     int
		detail     string
	}{
		{"name starts with a digit", "/v1/secrets/1BAD", cpapi.SecretRequest{Value: "v"}, 400, "not valid"},
		{"name with a dash", "/v1/secrets/MY-KEY", cpapi.SecretRequest{Value: "v"}, 400, "not valid"},
		{"name with a dot", "/v1/secrets/..", cpapi.SecretRequest{Value: "v"}, 400, ""},
		{"escaped slash", "/v1/secrets/A%2FB", cpapi.SecretRequest{Value: "v"}, 400, "not valid"},
		{"name too long", "/v1/secrets/" + strings.Repeat("N", 129), cpapi.SecretRequest{Value: "v"}, 400, "not valid"},
		{"unknown field", "/v1/secrets/K", `{"value":"v","secret":"x"}`, 400, `unknown field "secret"`},
		{"wrong type", "/v1/secrets/K", `{"value":42}`, 400, `field "value" must be string`},
		{"malformed", "/v1/secrets/K", `{"value":`, 400, ""},
		{"empty body", "/v1/secrets/K", "", 400, "empty"},
		{"trailing data", "/v1/secrets/K", `{"value":"v"}{}`, 400, "after the JSON object"},
		{"no value", "/v1/secrets/K", `{}`, 400, "must not be empty"},
		{"null value", "/v1/secrets/K", `{"value":null}`, 400, "must not be empty"},
		{"NUL in the value", "/v1/secrets/K", `{"value":"a\u0000b"}`, 400, "NUL"},
		{"invalid UTF-8", "/v1/secrets/K", []byte("{\"value\":\"\xff\xfe\"}"), 400, "UTF-8"},
		{"value over 64 KiB", "/v1/secrets/K", cpapi.SecretRequest{Value: big}, 400, "the limit is 65536"},
		{"body over the limit", "/v1/secrets/K", cpapi.SecretRequest{Value: strings.Repeat("v", 6*secrets.MaxValueBytes+2048)}, 413, ""},
		{"DELETE bad name", "/v1/secrets/no-such", nil, 400, ""},
	} {
		method := "PUT"
		if strings.HasPrefix(tc.name, "DELETE") {
			method = "DELETE"
		}
		resp, body := a.do(method, tc.path, tc.body)
		if tc.name == "name with a dot" && resp.StatusCode == 404 {
			continue // the path cleaner redirects or the mux does not match: either way nothing is stored
		}
		d := wantProblem(t, tc.name, resp, body, tc.status)
		if !strings.Contains(d.Detail, tc.detail) {
			t.Errorf("%s: detail %q; want it to say %q", tc.name, d.Detail, tc.detail)
		}
		if bytes.Contains(body, []byte("vvvvvvvv")) {
			t.Errorf("%s: the error echoes the value", tc.name)
		}
	}
	if _, body := a.do("GET", "/v1/secrets", nil); len(decode[cpapi.SecretList](t, body).Secrets) != 0 {
		t.Errorf("after only bad requests, GET /v1/secrets = %s; want none", body)
	}
}

// TestSecretsConcurrentPut: clients racing to set one new name all
// succeed; exactly one of them created it.
func TestSecretsConcurrentPut(t *testing.T) {
	a := newAPI(t)
	const n = 10
	codes := make([]int, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			req, _ := http.NewRequest("PUT", a.srv.URL+"/v1/secrets/RACE", strings.NewReader(fmt.Sprintf(`{"value":"v%d"}`, i)))
			req.Header.Set("Authorization", "Bearer "+a.token)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			resp.Body.Close()
			codes[i] = resp.StatusCode
		})
	}
	wg.Wait()
	created := 0
	for i, c := range codes {
		switch c {
		case 201:
			created++
		case 200:
		default:
			t.Errorf("PUT #%d = %d; want 200 or 201", i, c)
		}
	}
	if created != 1 {
		t.Errorf("%d concurrent PUTs answered 201; want exactly 1 (codes %v)", created, codes)
	}
}

// syncBuffer is a log sink for the server's goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestSecretValueNeverLogged runs a control plane logging everything at
// debug level (its own logger and the default one problem.Write uses),
// sends a value through every path, failures included, and looks for it in
// the logs and the answers.
func TestSecretValueNeverLogged(t *testing.T) {
	root := controlplanetest.StateRoot(t)
	controlplanetest.Prepare(t, "bwrap", root) // skips when bwrap is missing
	logs := &syncBuffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	prev := slog.Default()
	slog.SetDefault(log)
	t.Cleanup(func() { slog.SetDefault(prev) })

	dir := t.TempDir()
	cfg := controlplane.Config{Listen: "127.0.0.1:0", DataDir: dir, Runtime: "bwrap", StateRoot: root,
		Binary: runtimetest.Binary(t), AdminToken: "crl_test_admin_token_0123456789", ConfigPath: filepath.Join(dir, "cli.json"),
		Out: io.Discard, Log: log}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	srv, err := controlplane.New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := controlplane.Listen(cfg.Listen)
	if err != nil {
		srv.Close()
		t.Fatal(err)
	}
	rctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(rctx, ln) }()
	t.Cleanup(func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
		srv.Close()
	})
	a := apiFor(t, &controlplanetest.Server{URL: "http://" + ln.Addr().String(), Token: cfg.AdminToken})

	const canary = "corral-leak-canary-7f3a9c11d2"
	answers := ""
	for _, c := range []struct {
		method, path string
		body         any
	}{
		{"PUT", "/v1/secrets/CANARY", cpapi.SecretRequest{Value: canary}},
		{"PUT", "/v1/secrets/CANARY", cpapi.SecretRequest{Value: canary}},
		{"PUT", "/v1/secrets/CANARY", `{"value":"` + canary + `","extra":"` + canary + `"}`},
		{"PUT", "/v1/secrets/CANARY", `{"value":"` + canary + `"`},
		{"PUT", "/v1/secrets/CANARY", `{"value":"` + canary + `\u0000"}`},
		{"PUT", "/v1/secrets/CANARY", `{"value":"` + canary + `"}garbage`},
		{"PUT", "/v1/secrets/1BAD", cpapi.SecretRequest{Value: canary}},
		{"PUT", "/v1/secrets/CANARY", cpapi.SecretRequest{Value: canary + strings.Repeat("x", secrets.MaxValueBytes)}},
		{"GET", "/v1/secrets", nil},
		{"DELETE", "/v1/secrets/CANARY", nil},
	} {
		_, body := a.do(c.method, c.path, c.body)
		answers += string(body)
	}
	if strings.Contains(answers, canary) {
		t.Errorf("an answer contains the value: %s", answers)
	}
	got := logs.String()
	if !strings.Contains(got, "secret set") || !strings.Contains(got, "/v1/secrets/CANARY") || !strings.Contains(got, "request failed") {
		t.Fatalf("the logs lack the secret requests; the check would prove nothing:\n%s", got)
	}
	if strings.Contains(got, canary) {
		t.Errorf("the server logged the value:\n%s", got)
	}
}
