package sandboxd_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/corral-sh/corral/api/sandboxapi"
	"github.com/corral-sh/corral/internal/problem"
	"github.com/corral-sh/corral/internal/sandboxd"
	"github.com/corral-sh/corral/internal/sandboxd/sandboxdtest"
	"github.com/corral-sh/corral/internal/version"
)

// getJSON GETs url with c and decodes a 200 JSON body into v.
func getJSON(t *testing.T, c *http.Client, url string, v any) {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		t.Fatalf("GET %s: status %d; want 200; body %s", url, resp.StatusCode, body)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("GET %s: Content-Type %q; want application/json", url, ct)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("GET %s: decode: %v", url, err)
	}
}

// wantProblem checks that resp is problem+json with the given status.
func wantProblem(t *testing.T, what string, resp *http.Response, status int) {
	t.Helper()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != status {
		t.Errorf("%s: status %d; want %d (body %s)", what, resp.StatusCode, status, body)
		return
	}
	if ct := resp.Header.Get("Content-Type"); ct != problem.ContentType {
		t.Errorf("%s: Content-Type %q; want %q", what, ct, problem.ContentType)
	}
	var d problem.Details
	if err := json.Unmarshal(body, &d); err != nil || d.Status != status || d.Title == "" {
		t.Errorf("%s: body %s (%v); want a problem with status %d and a title", what, body, err, status)
	}
}

func TestSystemHealth(t *testing.T) {
	d := sandboxdtest.Start(t, sandboxdtest.Options{})
	time.Sleep(5 * time.Millisecond)
	var h sandboxapi.Health
	getJSON(t, d.HTTP, d.URL+"/v1/health", &h)
	if h.Status != "ok" {
		t.Errorf("status = %q; want ok", h.Status)
	}
	if h.Version != version.String() {
		t.Errorf("version = %q; want %q", h.Version, version.String())
	}
	if h.UptimeMS < 5 || h.UptimeMS > 60_000 {
		t.Errorf("uptime_ms = %d; want between 5 and 60000", h.UptimeMS)
	}
}

func TestSystemInfo(t *testing.T) {
	d := sandboxdtest.Start(t, sandboxdtest.Options{})
	var info sandboxapi.Info
	getJSON(t, d.HTTP, d.URL+"/v1/info", &info)
	host, _ := os.Hostname()
	checks := []struct {
		name string
		ok   bool
		got  any
	}{
		{"hostname = os.Hostname()", info.Hostname == host, info.Hostname},
		{"version = version.String()", info.Version == version.String(), info.Version},
		{"0 < cpus <= NumCPU", info.CPUs > 0 && info.CPUs <= float64(runtime.NumCPU()), info.CPUs},
		{"memory_limit_bytes > 0", info.MemoryLimitBytes > 0, info.MemoryLimitBytes},
		{"0 < memory_used_bytes <= limit", info.MemoryUsedBytes > 0 && info.MemoryUsedBytes <= info.MemoryLimitBytes, info.MemoryUsedBytes},
		{"disk_total_bytes > 0", info.DiskTotalBytes > 0, info.DiskTotalBytes},
		{"0 <= disk_free_bytes <= total", info.DiskFreeBytes >= 0 && info.DiskFreeBytes <= info.DiskTotalBytes, info.DiskFreeBytes},
		{"processes = 0", info.Processes == 0, info.Processes},
	}
	for _, c := range checks {
		if !c.ok {
			t.Errorf("info: got %v; want %s", c.got, c.name)
		}
	}

	// A running managed process is counted.
	p, err := d.Server.Procs().Spawn(sandboxapi.SpawnRequest{Command: "sleep", Args: []string{"30"}})
	if err != nil {
		t.Fatalf("Spawn sleep: %v", err)
	}
	defer d.Server.Procs().Delete(context.Background(), p.ID())
	getJSON(t, d.HTTP, d.URL+"/v1/info", &info)
	if info.Processes != 1 {
		t.Errorf("info with one running process: processes = %d; want 1", info.Processes)
	}
}

func TestSystemPorts(t *testing.T) {
	d := sandboxdtest.Start(t, sandboxdtest.Options{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port

	var list sandboxapi.PortList
	getJSON(t, d.HTTP, d.URL+"/v1/ports", &list)
	want := sandboxapi.Port{Port: port, Address: "127.0.0.1", PID: os.Getpid(), Command: commandName()}
	var got *sandboxapi.Port
	for i, p := range list.Ports {
		if p.Port == port && p.Address == "127.0.0.1" {
			got = &list.Ports[i]
		}
		if i > 0 && list.Ports[i-1].Port > p.Port {
			t.Errorf("ports not sorted: %d after %d", p.Port, list.Ports[i-1].Port)
		}
	}
	switch {
	case got == nil:
		t.Errorf("GET /v1/ports has no 127.0.0.1:%d; got %+v", port, list.Ports)
	case *got != want:
		t.Errorf("GET /v1/ports entry = %+v; want %+v", *got, want)
	}
}

// echo is what the upstream test server reports about the request it got.
type echo struct {
	Method  string      `json:"method"`
	Path    string      `json:"path"`
	RawPath string      `json:"raw_path"`
	Query   string      `json:"query"`
	Host    string      `json:"host"`
	Header  http.Header `json:"header"`
	Body    string      `json:"body"`
}

// upstream starts an app on 127.0.0.1 and returns its port.
func upstream(t *testing.T, h http.Handler) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().(*net.TCPAddr).Port
}

func echoHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Upstream", "yes")
		w.WriteHeader(http.StatusTeapot)
		json.NewEncoder(w).Encode(echo{
			Method: r.Method, Path: r.URL.Path, RawPath: r.URL.RawPath, Query: r.URL.RawQuery,
			Host: r.Host, Header: r.Header, Body: string(body),
		})
	})
}

func TestSystemProxyHTTP(t *testing.T) {
	const token = "t0ken"
	d := sandboxdtest.Start(t, sandboxdtest.Options{Config: sandboxd.Config{Token: token}})
	port := upstream(t, echoHandler())
	base := d.URL + "/v1/ports/" + strconv.Itoa(port) + "/proxy"
	plain := &http.Client{} // sends no Authorization by itself

	tests := []struct {
		name      string
		client    *http.Client
		method    string
		url       string
		body      string
		wantPath  string
		wantRaw   string
		wantQuery string
	}{
		{"GET with path and query", d.HTTP, "GET", base + "/api/items?x=1&y=two", "", "/api/items", "", "x=1&y=two"},
		{"root with trailing slash", d.HTTP, "GET", base + "/", "", "/", "", ""},
		{"escaped slash kept", d.HTTP, "GET", base + "/files/a%2Fb", "", "/files/a/b", "/files/a%2Fb", ""},
		{"POST body", d.HTTP, "POST", base + "/submit", `{"name":"corral"}`, "/submit", "", ""},
		{"DELETE", d.HTTP, "DELETE", base + "/items/7", "", "/items/7", "", ""},
		{"access_token removed, order kept", plain, "GET", base + "/q?b=2&access_token=" + token + "&a=1", "", "/q", "", "b=2&a=1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequest(tt.method, tt.url, strings.NewReader(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("X-Custom", "kept")
			resp, err := tt.client.Do(req)
			if err != nil {
				t.Fatalf("%s %s: %v", tt.method, tt.url, err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusTeapot || resp.Header.Get("X-Upstream") != "yes" {
				t.Fatalf("status %d, X-Upstream %q; want the upstream's 418 and header", resp.StatusCode, resp.Header.Get("X-Upstream"))
			}
			var got echo
			if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
				t.Fatal(err)
			}
			for _, c := range []struct{ field, got, want string }{
				{"method", got.Method, tt.method},
				{"path", got.Path, tt.wantPath},
				{"raw path", got.RawPath, tt.wantRaw},
				{"query", got.Query, tt.wantQuery},
				{"body", got.Body, tt.body},
				{"Host", got.Host, "127.0.0.1:" + strconv.Itoa(port)},
				{"Authorization", got.Header.Get("Authorization"), ""},
				{"X-Custom", got.Header.Get("X-Custom"), "kept"},
				{"X-Forwarded-Host", got.Header.Get("X-Forwarded-Host"), strings.TrimPrefix(d.URL, "http://")},
				{"X-Forwarded-Proto", got.Header.Get("X-Forwarded-Proto"), "http"},
				{"X-Forwarded-For", got.Header.Get("X-Forwarded-For"), "127.0.0.1"},
				{"X-Forwarded-Prefix", got.Header.Get("X-Forwarded-Prefix"), "/v1/ports/" + strconv.Itoa(port) + "/proxy"},
			} {
				if c.got != c.want {
					t.Errorf("upstream saw %s %q; want %q", c.field, c.got, c.want)
				}
			}
			if strings.Contains(got.Query, token) {
				t.Errorf("upstream saw the daemon token in its query %q", got.Query)
			}
		})
	}
}

// TestSystemProxyOuterForwarding: what an outer proxy (the control plane)
// said in X-Forwarded-* is kept, not overwritten, over TCP and over the
// unix socket the control plane really uses.
func TestSystemProxyOuterForwarding(t *testing.T) {
	port := upstream(t, echoHandler())
	for _, tt := range []struct {
		name    string
		unix    bool
		wantXFF string
	}{
		{"tcp", false, "203.0.113.9, 127.0.0.1"},
		{"unix socket", true, "203.0.113.9"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d := sandboxdtest.Start(t, sandboxdtest.Options{Unix: tt.unix})
			req, _ := http.NewRequest("GET", d.URL+"/v1/ports/"+strconv.Itoa(port)+"/proxy/", nil)
			req.Header.Set("X-Forwarded-For", "203.0.113.9")
			req.Header.Set("X-Forwarded-Host", "corral.example.com")
			req.Header.Set("X-Forwarded-Proto", "https")
			req.Header.Set("X-Forwarded-Prefix", "/v1/sandboxes/sb_1/ports/3000/proxy")
			resp, err := d.HTTP.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var got echo
			if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
				t.Fatal(err)
			}
			for h, want := range map[string]string{
				"X-Forwarded-For":    tt.wantXFF,
				"X-Forwarded-Host":   "corral.example.com",
				"X-Forwarded-Proto":  "https",
				"X-Forwarded-Prefix": "/v1/sandboxes/sb_1/ports/3000/proxy",
			} {
				if g := got.Header.Get(h); g != want {
					t.Errorf("upstream saw %s %q; want %q", h, g, want)
				}
			}
		})
	}
}

func TestSystemProxyErrors(t *testing.T) {
	d := sandboxdtest.Start(t, sandboxdtest.Options{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().(*net.TCPAddr).Port
	ln.Close()

	tests := []struct {
		name   string
		port   string
		status int
	}{
		{"port 0", "0", http.StatusBadRequest},
		{"port 65536", "65536", http.StatusBadRequest},
		{"negative port", "-1", http.StatusBadRequest},
		{"not a number", "http", http.StatusBadRequest},
		{"closed port", strconv.Itoa(closed), http.StatusBadGateway},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, method := range []string{"GET", "POST"} {
				req, _ := http.NewRequest(method, d.URL+"/v1/ports/"+tt.port+"/proxy/x", strings.NewReader("{}"))
				resp, err := d.HTTP.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				wantProblem(t, method+" port "+tt.port, resp, tt.status)
				resp.Body.Close()
			}
		})
	}
}

// TestSystemProxySSE: an event flushed by the upstream reaches the client
// while the upstream is still streaming.
func TestSystemProxySSE(t *testing.T) {
	d := sandboxdtest.Start(t, sandboxdtest.Options{})
	release := make(chan struct{})
	port := upstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: first\n\n")
		http.NewResponseController(w).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
			return
		case <-time.After(10 * time.Second):
		}
		io.WriteString(w, "data: last\n\n")
	}))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", d.URL+"/v1/ports/"+strconv.Itoa(port)+"/proxy/events", nil)
	resp, err := d.HTTP.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != 200 || ct != "text/event-stream" {
		t.Fatalf("status %d, Content-Type %q; want 200 text/event-stream", resp.StatusCode, ct)
	}
	br := bufio.NewReader(resp.Body)
	first := make(chan string, 1)
	go func() {
		line, _ := br.ReadString('\n')
		first <- line
	}()
	select {
	case line := <-first:
		if line != "data: first\n" {
			t.Errorf("first line %q; want %q", line, "data: first\n")
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("the flushed event did not reach the client while the upstream streamed")
	}
	close(release)
	rest, _ := io.ReadAll(br)
	if want := "\ndata: last\n\n"; string(rest) != want {
		t.Errorf("rest of stream %q; want %q", rest, want)
	}
}

// TestSystemProxyWebSocket echoes through the proxy, authenticated as a
// browser does (?access_token=), which the app must not see.
func TestSystemProxyWebSocket(t *testing.T) {
	const token = "t0ken"
	d := sandboxdtest.Start(t, sandboxdtest.Options{Config: sandboxd.Config{Token: token}})
	seen := make(chan *http.Request, 1)
	port := upstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen <- r
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		for {
			typ, data, err := c.Read(r.Context())
			if err != nil {
				return
			}
			if err := c.Write(r.Context(), typ, append([]byte("echo: "), data...)); err != nil {
				return
			}
		}
	}))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	u := "ws" + strings.TrimPrefix(d.URL, "http") + "/v1/ports/" + strconv.Itoa(port) + "/proxy/ws?room=1&access_token=" + token
	c, _, err := websocket.Dial(ctx, u, nil)
	if err != nil {
		t.Fatalf("Dial through the proxy: %v", err)
	}
	defer c.CloseNow()
	for _, msg := range []string{"hello", "again"} {
		if err := c.Write(ctx, websocket.MessageText, []byte(msg)); err != nil {
			t.Fatalf("Write: %v", err)
		}
		typ, got, err := c.Read(ctx)
		if err != nil {
			t.Fatalf("Read: %v", err)
		}
		if typ != websocket.MessageText || string(got) != "echo: "+msg {
			t.Errorf("Read = %v %q; want text %q", typ, got, "echo: "+msg)
		}
	}
	c.Close(websocket.StatusNormalClosure, "")
	r := <-seen
	if r.URL.Path != "/ws" || r.URL.RawQuery != "room=1" {
		t.Errorf("upstream saw %s?%s; want /ws?room=1", r.URL.Path, r.URL.RawQuery)
	}

	// Without the token the upgrade is refused before it reaches the app.
	_, resp, err := websocket.Dial(ctx, strings.Replace(u, "access_token="+token, "access_token=wrong", 1), nil)
	if err == nil || resp == nil || resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("Dial with a wrong token: resp %v, err %v; want 401", resp, err)
	}
}

func TestSystemMetrics(t *testing.T) {
	d := sandboxdtest.Start(t, sandboxdtest.Options{})
	var h sandboxapi.Health
	getJSON(t, d.HTTP, d.URL+"/v1/health", &h)
	resp, err := d.HTTP.Get(d.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: status %d; want 200", resp.StatusCode)
	}
	for _, want := range []string{
		`corral_sandboxd_http_requests_total{code="200",route="GET /v1/health"} 1`,
		`corral_sandboxd_orphans_reaped_total 0`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("GET /metrics has no %q", want)
		}
	}
}

func TestSystemAuth(t *testing.T) {
	d := sandboxdtest.Start(t, sandboxdtest.Options{Config: sandboxd.Config{Token: "t"}})
	plain := &http.Client{}
	tests := []struct {
		name   string
		path   string
		header string
		status int
	}{
		{"no token", "/v1/health", "", http.StatusUnauthorized},
		{"wrong bearer", "/v1/health", "Bearer nope", http.StatusUnauthorized},
		{"wrong scheme", "/v1/health", "Basic dDp0", http.StatusUnauthorized},
		{"wrong access_token", "/v1/health?access_token=nope", "", http.StatusUnauthorized},
		{"bearer", "/v1/health", "Bearer t", http.StatusOK},
		{"access_token", "/v1/health?access_token=t", "", http.StatusOK},
		{"info with access_token", "/v1/info?access_token=t", "", http.StatusOK},
		{"ports without token", "/v1/ports", "", http.StatusUnauthorized},
		{"proxy without token", "/v1/ports/1/proxy/", "", http.StatusUnauthorized},
		{"metrics without token", "/metrics", "", http.StatusUnauthorized},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequest("GET", d.URL+tt.path, nil)
			if tt.header != "" {
				req.Header.Set("Authorization", tt.header)
			}
			resp, err := plain.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if tt.status != http.StatusOK {
				wantProblem(t, "GET "+tt.path, resp, tt.status)
				if resp.Header.Get("WWW-Authenticate") == "" {
					t.Errorf("GET %s: no WWW-Authenticate header on 401", tt.path)
				}
				return
			}
			if resp.StatusCode != tt.status {
				t.Errorf("GET %s: status %d; want %d", tt.path, resp.StatusCode, tt.status)
			}
		})
	}
}

// commandName is how /v1/ports names this test binary.
func commandName() string {
	exe := os.Args[0]
	return exe[strings.LastIndexByte(exe, '/')+1:]
}

// TestSystemProxyStreamEndsOnShutdown: a proxied stream that never ends by
// itself is cut when the daemon shuts down.
func TestSystemProxyStreamEndsOnShutdown(t *testing.T) {
	d := sandboxdtest.Start(t, sandboxdtest.Options{})
	port := upstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, ": open\n\n")
		http.NewResponseController(w).Flush()
		<-r.Context().Done()
	}))
	resp, err := d.HTTP.Get(d.URL + "/v1/ports/" + strconv.Itoa(port) + "/proxy/")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	if line, err := br.ReadString('\n'); line != ": open\n" {
		t.Fatalf("first line %q, %v; want %q", line, err, ": open\n")
	}
	ended := make(chan error, 1)
	go func() {
		_, err := io.Copy(io.Discard, br)
		ended <- err
	}()
	d.Server.Close()
	select {
	case <-ended:
	case <-time.After(20 * time.Second):
		t.Fatalf("proxied stream still open 20s after the daemon closed")
	}
}
