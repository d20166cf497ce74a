package webui_test

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"testing/fstest"

	"github.com/corral-sh/corral/internal/httpmw"
	"github.com/corral-sh/corral/internal/webui"
)

const (
	indexHTML = `<!doctype html><html><head><script type="module" src="/assets/app-1234.js"></script></head><body><div id="root"></div></body></html>`
	favicon   = `<svg xmlns="http://www.w3.org/2000/svg"></svg>`
)

var appJS = strings.Repeat("console.log('corral');\n", 400) // big enough to be gzipped

func builtFS() fstest.MapFS {
	return fstest.MapFS{
		"index.html":          {Data: []byte(indexHTML)},
		"favicon.svg":         {Data: []byte(favicon)},
		"assets/app-1234.js":  {Data: []byte(appJS)},
		"assets/app-1234.css": {Data: []byte("body{color:red}")},
	}
}

// server mounts the UI the way the control plane does: next to API routes,
// behind the problem+json fallback.
func server(t *testing.T, ui *webui.UI) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/jobs", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"jobs":[]}`)
	})
	mux.HandleFunc("GET /openapi.json", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{}`)
	})
	ui.Register(mux)
	srv := httptest.NewServer(httpmw.ProblemFallback(mux))
	t.Cleanup(srv.Close)
	return srv
}

func get(t *testing.T, srv *httptest.Server, method, path string, hdr ...string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, srv.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	// The transport must not add (and undo) gzip on its own.
	tr := &http.Transport{DisableCompression: true}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, body
}

func TestPagesAndRoutes(t *testing.T) {
	srv := server(t, webui.NewFS(builtFS()))
	tests := []struct {
		name, method, path string
		status             int
		ctype              string
		body               string // substring
		cache              string
	}{
		{"root", "GET", "/", 200, "text/html", "<div id=\"root\">", "no-cache"},
		{"login", "GET", "/login", 200, "text/html", "<div id=\"root\">", "no-cache"},
		{"jobs", "GET", "/jobs", 200, "text/html", "<div id=\"root\">", "no-cache"},
		{"job deep link", "GET", "/jobs/job_01HX?tab=terminal", 200, "text/html", "<div id=\"root\">", "no-cache"},
		{"new job", "GET", "/jobs/new", 200, "text/html", "<div id=\"root\">", "no-cache"},
		{"sandbox deep link", "GET", "/sandboxes/sb_abc", 200, "text/html", "<div id=\"root\">", "no-cache"},
		{"asset", "GET", "/assets/app-1234.js", 200, "text/javascript", "console.log", "public, max-age=31536000, immutable"},
		{"css", "GET", "/assets/app-1234.css", 200, "text/css", "color:red", "public, max-age=31536000, immutable"},
		{"favicon", "GET", "/favicon.svg", 200, "image/svg+xml", "<svg", "public, max-age=86400"},
		{"missing asset", "GET", "/assets/nope.js", 404, "application/problem+json", "no such asset", ""},
		{"asset directory", "GET", "/assets/", 404, "application/problem+json", "no such asset", ""},
		{"traversal", "GET", "/assets/%2e%2e/index.html", 404, "application/problem+json", "", ""},
		{"encoded slash", "GET", "/assets/..%2findex.html", 404, "application/problem+json", "", ""},
		{"API untouched", "GET", "/v1/jobs", 200, "application/json", `{"jobs":[]}`, ""},
		{"openapi untouched", "GET", "/openapi.json", 200, "application/json", "{}", ""},
		{"unknown API path stays a problem", "GET", "/v1/nothing", 404, "application/problem+json", "no route", ""},
		{"unknown top-level path stays a problem", "GET", "/v2/nothing", 404, "application/problem+json", "no route", ""},
		{"other method on the page", "POST", "/", 405, "application/problem+json", "not allowed", ""},
		{"other method on a UI route", "DELETE", "/jobs/x", 405, "application/problem+json", "not allowed", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := get(t, srv, tt.method, tt.path)
			if resp.StatusCode != tt.status {
				t.Fatalf("%s %s = %d; want %d (%s)", tt.method, tt.path, resp.StatusCode, tt.status, body)
			}
			if got := resp.Header.Get("Content-Type"); !strings.HasPrefix(got, tt.ctype) {
				t.Errorf("Content-Type = %q; want %q", got, tt.ctype)
			}
			if !strings.Contains(string(body), tt.body) {
				t.Errorf("body = %.200q; want it to contain %q", body, tt.body)
			}
			if got := resp.Header.Get("Cache-Control"); tt.cache != "" && got != tt.cache {
				t.Errorf("Cache-Control = %q; want %q", got, tt.cache)
			}
			if tt.status == 200 && strings.HasPrefix(tt.ctype, "text/") && tt.path != "/v1/jobs" {
				if got := resp.Header.Get("Content-Security-Policy"); got != webui.ContentSecurityPolicy {
					t.Errorf("Content-Security-Policy = %q", got)
				}
				if got := resp.Header.Get("X-Content-Type-Options"); got != "nosniff" {
					t.Errorf("X-Content-Type-Options = %q; want nosniff", got)
				}
			}
		})
	}
}

func TestCSPForbidsInlineScript(t *testing.T) {
	directives := map[string]string{}
	for _, d := range strings.Split(webui.ContentSecurityPolicy, ";") {
		name, value, _ := strings.Cut(strings.TrimSpace(d), " ")
		directives[name] = value
	}
	for name, want := range map[string]string{"script-src": "'self'", "object-src": "'none'", "base-uri": "'none'", "frame-ancestors": "'none'", "connect-src": "'self'"} {
		if got := directives[name]; got != want {
			t.Errorf("%s = %q; want %q", name, got, want)
		}
	}
}

func TestGzipAndValidators(t *testing.T) {
	srv := server(t, webui.NewFS(builtFS()))
	plain, body := get(t, srv, "GET", "/assets/app-1234.js")
	if plain.Header.Get("Content-Encoding") != "" || string(body) != appJS {
		t.Fatalf("without Accept-Encoding: encoding %q, %d bytes; want identity, %d", plain.Header.Get("Content-Encoding"), len(body), len(appJS))
	}
	if got := plain.Header.Get("Vary"); got != "Accept-Encoding" {
		t.Errorf("Vary = %q; want Accept-Encoding", got)
	}
	zipped, zbody := get(t, srv, "GET", "/assets/app-1234.js", "Accept-Encoding", "br, gzip;q=0.8")
	if zipped.Header.Get("Content-Encoding") != "gzip" {
		t.Fatalf("Content-Encoding = %q; want gzip", zipped.Header.Get("Content-Encoding"))
	}
	if len(zbody) >= len(appJS) {
		t.Errorf("gzipped body is %d bytes, plain %d", len(zbody), len(appJS))
	}
	zr, err := gzip.NewReader(bytes.NewReader(zbody))
	if err != nil {
		t.Fatal(err)
	}
	if unz, err := io.ReadAll(zr); err != nil || string(unz) != appJS {
		t.Fatalf("gunzip: %v, %d bytes; want the asset", err, len(unz))
	}
	if plain.Header.Get("ETag") == "" || plain.Header.Get("ETag") == zipped.Header.Get("ETag") {
		t.Errorf("ETags plain %q, gzip %q; want two different ones", plain.Header.Get("ETag"), zipped.Header.Get("ETag"))
	}
	again, b := get(t, srv, "GET", "/assets/app-1234.js", "If-None-Match", plain.Header.Get("ETag"))
	if again.StatusCode != http.StatusNotModified || len(b) != 0 {
		t.Errorf("If-None-Match = %d with %d bytes; want 304, empty", again.StatusCode, len(b))
	}
	part, pb := get(t, srv, "GET", "/assets/app-1234.js", "Range", "bytes=0-6")
	if part.StatusCode != http.StatusPartialContent || string(pb) != "console" {
		t.Errorf("Range = %d %q; want 206 \"console\"", part.StatusCode, pb)
	}
	head, hb := get(t, srv, "HEAD", "/")
	if head.StatusCode != 200 || len(hb) != 0 || head.Header.Get("Content-Length") != "" && head.Header.Get("Content-Length") != itoa(len(indexHTML)) {
		t.Errorf("HEAD / = %d, %d bytes, Content-Length %q", head.StatusCode, len(hb), head.Header.Get("Content-Length"))
	}
	for _, enc := range []string{"gzip;q=0", "identity", "deflate", ""} {
		resp, _ := get(t, srv, "GET", "/assets/app-1234.js", "Accept-Encoding", enc)
		if resp.Header.Get("Content-Encoding") != "" {
			t.Errorf("Accept-Encoding %q got Content-Encoding %q", enc, resp.Header.Get("Content-Encoding"))
		}
	}
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// TestNotBuilt: a binary built without the UI explains how to build it.
func TestNotBuilt(t *testing.T) {
	ui := webui.NewFS(fstest.MapFS{})
	if ui.Built() {
		t.Fatal("Built() = true for an empty file system")
	}
	srv := server(t, ui)
	for _, p := range []string{"/", "/jobs/job_1", "/sandboxes", "/login"} {
		resp, body := get(t, srv, "GET", p)
		if resp.StatusCode != http.StatusServiceUnavailable {
			t.Errorf("GET %s = %d; want 503", p, resp.StatusCode)
		}
		if !strings.Contains(string(body), "make web") || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
			t.Errorf("GET %s: %s %.300q; want an HTML page naming `make web`", p, resp.Header.Get("Content-Type"), body)
		}
	}
	resp, body := get(t, srv, "GET", "/assets/app.js")
	if resp.StatusCode != 404 || !strings.Contains(string(body), "make web") {
		t.Errorf("GET /assets/app.js = %d %s; want 404 naming make web", resp.StatusCode, body)
	}
}

// TestEmbedded checks the UI embedded in this build matches the files on
// disk: built when static/dist/index.html exists, the not-built page when
// it does not.
func TestEmbedded(t *testing.T) {
	_, err := os.Stat("static/dist/index.html")
	ui := webui.New()
	if got, want := ui.Built(), err == nil; got != want {
		t.Fatalf("Built() = %v; want %v (static/dist/index.html: %v)", got, want, err)
	}
	resp, _ := get(t, server(t, ui), "GET", "/")
	if want := map[bool]int{true: 200, false: 503}[ui.Built()]; resp.StatusCode != want {
		t.Errorf("GET / = %d; want %d", resp.StatusCode, want)
	}
}

// TestConcurrentFirstRequests: many clients asking for assets that were
// never loaded yet (each asset and its gzip form are made once, under the
// race detector).
func TestConcurrentFirstRequests(t *testing.T) {
	srv := server(t, webui.NewFS(builtFS()))
	var wg sync.WaitGroup
	errs := make(chan string, 64)
	for i := range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			path := []string{"/assets/app-1234.js", "/assets/app-1234.css", "/", "/favicon.svg"}[i%4]
			req, _ := http.NewRequest("GET", srv.URL+path, nil)
			req.Header.Set("Accept-Encoding", "gzip")
			resp, err := (&http.Client{Transport: &http.Transport{DisableCompression: true}}).Do(req)
			if err != nil {
				errs <- err.Error()
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				errs <- path + ": " + resp.Status
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}
