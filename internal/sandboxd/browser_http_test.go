package sandboxd_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"image/png"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/corral-sh/corral/api/sandboxapi"
	"github.com/corral-sh/corral/internal/sandboxd/browser"
	"github.com/corral-sh/corral/internal/testenv"
)

// needBrowser skips (fails in CI) when no Chromium is installed.
func needBrowser(t testing.TB) {
	t.Helper()
	if _, err := browser.NewManager(browser.Options{}).Executable(); err != nil {
		testenv.Unavailable(t, "%v (scripts/deps.sh installs chromium)", err)
	}
}

// testSite serves the pages the browser tests drive, on 127.0.0.1.
// /slow answers only once release is closed.
func testSite(t *testing.T) (site *httptest.Server, release func()) {
	t.Helper()
	gate := make(chan struct{})
	var once sync.Once
	release = func() { once.Do(func() { close(gate) }) }
	mux := http.NewServeMux()
	page := func(body string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			fmt.Fprint(w, body)
		}
	}
	mux.Handle("GET /{$}", page(`<!doctype html><html><head><title>Corral test</title></head><body>
<h1 id="msg">before</h1>
<button id="go" onclick="press()">Press me</button>
<form id="f" onsubmit="event.preventDefault(); document.getElementById('greeting').textContent = 'Hello, ' + document.getElementById('name').value + '!'">
<label for="name">Your name</label><input id="name" value="">
</form>
<p id="greeting"></p>
<div style="display:none"><button id="hidden">Hidden</button></div>
<script>let n = 0; function press() { n++; document.getElementById('msg').textContent = 'clicked ' + n; }</script>
</body></html>`))
	mux.Handle("GET /tall", page(`<!doctype html><title>Tall</title><div style="height:3000px">top</div><p>bottom</p>`))
	mux.Handle("GET /late", page(`<!doctype html><title>Late</title><script>
setTimeout(() => { const p = document.createElement('p'); p.id = 'late'; p.textContent = 'late arrival'; document.body.appendChild(p); }, 150);
</script>`))
	mux.Handle("GET /idle", page(`<!doctype html><title>Idle</title><p id="s">waiting</p><script>
fetch('/slow').then(r => r.text()).then(t => { document.getElementById('s').textContent = 'loaded:' + t; });
</script>`))
	mux.HandleFunc("GET /slow", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-gate:
			fmt.Fprint(w, "slow")
		case <-r.Context().Done():
		}
	})
	mux.Handle("GET /status404", http.NotFoundHandler())
	site = httptest.NewServer(mux)
	t.Cleanup(func() {
		release()
		site.Close()
	})
	return site, release
}

// bcall sends a JSON request and returns the status and body; it never
// fails the test, so goroutines can use it.
func bcall(a *api, method, path string, body any) (int, []byte, error) {
	var rd *bytes.Reader
	switch b := body.(type) {
	case nil:
		rd = bytes.NewReader(nil)
	case string:
		rd = bytes.NewReader([]byte(b))
	case []byte:
		rd = bytes.NewReader(b)
	default:
		js, _ := json.Marshal(b)
		rd = bytes.NewReader(js)
	}
	req, err := http.NewRequest(method, a.d.URL+path, rd)
	if err != nil {
		return 0, nil, err
	}
	resp, err := a.d.HTTP.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	_, err = buf.ReadFrom(resp.Body)
	return resp.StatusCode, buf.Bytes(), err
}

// must sends a request that must answer want, and decodes the body into
// out when out is not nil.
func must(t *testing.T, a *api, method, path string, body any, want int, out any) {
	t.Helper()
	resp, data := a.do(method, path, body)
	if resp.StatusCode != want {
		t.Fatalf("%s %s: status %d (%s); want %d", method, path, resp.StatusCode, bytes.TrimSpace(data), want)
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			t.Fatalf("%s %s: decode %s: %v", method, path, data, err)
		}
	}
}

func pageText(t *testing.T, a *api, tab string) string {
	t.Helper()
	var pt sandboxapi.PageText
	must(t, a, "GET", "/v1/browser/tabs/"+tab+"/text", nil, 200, &pt)
	return pt.Text
}

// axFind returns the node of the tree with role and name.
func axFind(t *testing.T, a *api, tab, role, name string) sandboxapi.AXNode {
	t.Helper()
	var tree sandboxapi.AXTree
	must(t, a, "GET", "/v1/browser/tabs/"+tab+"/ax", nil, 200, &tree)
	for _, n := range tree.Nodes {
		if n.Role == role && n.Name == name {
			return n
		}
	}
	t.Fatalf("no AX node %s %q in %+v", role, name, tree.Nodes)
	return sandboxapi.AXNode{}
}

// groupAlive lists the processes still in process group pgid.
func groupAlive(pgid int) []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
		if len(f) > 2 && f[2] == strconv.Itoa(pgid) && f[0] != "Z" {
			out = append(out, pid)
		}
	}
	return out
}

func TestBrowser(t *testing.T) {
	needBrowser(t)
	site, release := testSite(t)
	a := newAPI(t)

	var st sandboxapi.Browser
	must(t, a, "GET", "/v1/browser", nil, 200, &st)
	if st.Running || st.Executable == "" {
		t.Fatalf("status before start = %+v; want not running, with an executable", st)
	}

	var tab sandboxapi.Tab
	must(t, a, "POST", "/v1/browser/tabs", sandboxapi.TabRequest{URL: site.URL + "/"}, 201, &tab)
	if tab.Title != "Corral test" || tab.Status != 200 || !strings.HasPrefix(tab.ID, "t_") {
		t.Fatalf("open tab = %+v; want the test page, status 200", tab)
	}
	id := tab.ID
	must(t, a, "GET", "/v1/browser", nil, 200, &st)
	if !st.Running || !st.Headless || st.PID == 0 || !strings.HasPrefix(st.Version, "Chrome/") || st.Tabs != 1 {
		t.Fatalf("status after the first tab = %+v; want running headless with 1 tab", st)
	}

	t.Run("click by selector", func(t *testing.T) {
		must(t, a, "POST", "/v1/browser/tabs/"+id+"/click", sandboxapi.ClickRequest{Selector: "#go"}, 200, nil)
		if got := pageText(t, a, id); !strings.Contains(got, "clicked 1") {
			t.Errorf("text after a click = %q; want it to contain %q", got, "clicked 1")
		}
	})

	t.Run("click by accessibility node", func(t *testing.T) {
		btn := axFind(t, a, id, "button", "Press me")
		if btn.NodeID == 0 {
			t.Fatalf("button node %+v has no node_id", btn)
		}
		must(t, a, "POST", "/v1/browser/tabs/"+id+"/click", sandboxapi.ClickRequest{NodeID: btn.NodeID}, 200, nil)
		if got := pageText(t, a, id); !strings.Contains(got, "clicked 2") {
			t.Errorf("text after the AX click = %q; want it to contain %q", got, "clicked 2")
		}
	})

	t.Run("type and submit", func(t *testing.T) {
		box := axFind(t, a, id, "textbox", "Your name")
		must(t, a, "POST", "/v1/browser/tabs/"+id+"/type", sandboxapi.TypeRequest{NodeID: box.NodeID, Text: "Zoë 🐄"}, 200, nil)
		must(t, a, "POST", "/v1/browser/tabs/"+id+"/type", sandboxapi.TypeRequest{Selector: "#name", Text: "Ada", Clear: true, Submit: true}, 200, nil)
		if got := pageText(t, a, id); !strings.Contains(got, "Hello, Ada!") {
			t.Errorf("text after typing = %q; want %q", got, "Hello, Ada!")
		}
		var r sandboxapi.EvalResult
		must(t, a, "POST", "/v1/browser/tabs/"+id+"/eval", sandboxapi.EvalRequest{Expression: "document.getElementById('name').value"}, 200, &r)
		if string(r.Value) != `"Ada"` {
			t.Errorf("input value = %s; want \"Ada\" (clear replaced the earlier text)", r.Value)
		}
	})

	t.Run("eval", func(t *testing.T) {
		for _, c := range []struct{ expr, typ, value, desc string }{
			{"6 * 7", "number", "42", ""},
			{"({a: [1, 'x'], b: null})", "object", `{"a":[1,"x"],"b":null}`, ""},
			{"Promise.resolve('later')", "string", `"later"`, ""},
			{"let v = 1; v + 1", "number", "2", ""},
			{"undefined", "undefined", "null", ""},
			{"0/0", "number", "null", "NaN"},
			{"document.title", "string", `"Corral test"`, ""},
		} {
			var r sandboxapi.EvalResult
			must(t, a, "POST", "/v1/browser/tabs/"+id+"/eval", sandboxapi.EvalRequest{Expression: c.expr}, 200, &r)
			var got bytes.Buffer
			_ = json.Compact(&got, r.Value)
			if r.Type != c.typ || got.String() != c.value || r.Description != c.desc {
				t.Errorf("eval %q = %+v (value %s); want type %s value %s description %q", c.expr, r, got.String(), c.typ, c.value, c.desc)
			}
		}
	})

	t.Run("screenshot", func(t *testing.T) {
		resp, body := a.do("GET", "/v1/browser/tabs/"+id+"/screenshot", nil)
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "image/png" {
			t.Fatalf("screenshot: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		img, err := png.Decode(bytes.NewReader(body))
		if err != nil {
			t.Fatalf("screenshot is not a PNG: %v", err)
		}
		if b := img.Bounds(); b.Dx() != 1280 || b.Dy() != 800 {
			t.Errorf("viewport screenshot is %dx%d; want 1280x800", b.Dx(), b.Dy())
		}
		must(t, a, "POST", "/v1/browser/tabs/"+id+"/navigate", sandboxapi.NavigateRequest{URL: site.URL + "/tall"}, 200, nil)
		_, body = a.do("GET", "/v1/browser/tabs/"+id+"/screenshot?full_page=true", nil)
		img, err = png.Decode(bytes.NewReader(body))
		if err != nil {
			t.Fatalf("full-page screenshot is not a PNG: %v", err)
		}
		if b := img.Bounds(); b.Dy() < 3000 {
			t.Errorf("full-page screenshot is %dx%d; want at least 3000 high", b.Dx(), b.Dy())
		}
	})

	t.Run("wait for a selector", func(t *testing.T) {
		must(t, a, "POST", "/v1/browser/tabs/"+id+"/navigate", sandboxapi.NavigateRequest{URL: site.URL + "/late", Wait: "none"}, 200, nil)
		must(t, a, "POST", "/v1/browser/tabs/"+id+"/wait", sandboxapi.WaitRequest{Selector: "#late"}, 200, nil)
		if got := pageText(t, a, id); !strings.Contains(got, "late arrival") {
			t.Errorf("text after waiting = %q; want the late element", got)
		}
		resp, body := a.do("POST", "/v1/browser/tabs/"+id+"/wait", sandboxapi.WaitRequest{Selector: "#never", TimeoutMS: 200})
		wantStatus(t, "wait for a missing selector", resp.StatusCode, body, 504)
	})

	t.Run("network idle", func(t *testing.T) {
		// /slow hangs: the page loads, but the network never goes idle.
		resp, body := a.do("POST", "/v1/browser/tabs/"+id+"/navigate",
			sandboxapi.NavigateRequest{URL: site.URL + "/idle", Wait: "networkidle", TimeoutMS: 1500})
		wantStatus(t, "networkidle with a hanging fetch", resp.StatusCode, body, 504)
		release()
		must(t, a, "POST", "/v1/browser/tabs/"+id+"/wait", sandboxapi.WaitRequest{NetworkIdle: true}, 200, nil)
		if got := pageText(t, a, id); !strings.Contains(got, "loaded:slow") {
			t.Errorf("text once idle = %q; want the fetched text", got)
		}
		// The same page with the fetch answering: navigate returns only
		// once the fetch is done.
		must(t, a, "POST", "/v1/browser/tabs/"+id+"/navigate", sandboxapi.NavigateRequest{URL: site.URL + "/idle", Wait: "networkidle"}, 200, nil)
		if got := pageText(t, a, id); !strings.Contains(got, "loaded:slow") {
			t.Errorf("text after navigate networkidle = %q; want the fetched text", got)
		}
	})

	t.Run("statuses and errors", func(t *testing.T) {
		must(t, a, "POST", "/v1/browser/tabs/"+id+"/navigate", sandboxapi.NavigateRequest{URL: site.URL + "/"}, 200, nil)
		var nav sandboxapi.Tab
		must(t, a, "POST", "/v1/browser/tabs/"+id+"/navigate", sandboxapi.NavigateRequest{URL: site.URL + "/status404"}, 200, &nav)
		if nav.Status != 404 {
			t.Errorf("navigate to a 404 page: status %d; want 404", nav.Status)
		}
		must(t, a, "POST", "/v1/browser/tabs/"+id+"/navigate", sandboxapi.NavigateRequest{URL: site.URL + "/"}, 200, nil)
		closed := httptest.NewServer(http.NotFoundHandler())
		closedURL := closed.URL
		closed.Close()
		tp := "/v1/browser/tabs/" + id
		huge := `{"expression":"` + strings.Repeat("x", 5<<20) + `"}`
		for _, c := range []struct {
			name, method, path string
			body               any
			want               int
			detail             string
		}{
			{"unknown tab", "GET", "/v1/browser/tabs/t_nope", nil, 404, ""},
			{"unknown tab navigate", "POST", "/v1/browser/tabs/t_nope/navigate", sandboxapi.NavigateRequest{URL: site.URL}, 404, ""},
			{"unknown tab text", "GET", "/v1/browser/tabs/t_nope/text", nil, 404, ""},
			{"unknown tab close", "DELETE", "/v1/browser/tabs/t_nope", nil, 404, ""},
			{"malformed JSON", "POST", tp + "/click", `{"selector":`, 400, ""},
			{"unknown field", "POST", tp + "/click", `{"selectr":"#go"}`, 400, ""},
			{"empty body", "POST", tp + "/navigate", "", 400, ""},
			{"huge body", "POST", tp + "/eval", huge, 413, ""},
			{"javascript URL", "POST", tp + "/navigate", sandboxapi.NavigateRequest{URL: "javascript:alert(1)"}, 400, "scheme"},
			{"chrome URL", "POST", tp + "/navigate", sandboxapi.NavigateRequest{URL: "chrome://settings"}, 400, "scheme"},
			{"URL without host", "POST", tp + "/navigate", sandboxapi.NavigateRequest{URL: "http:///x"}, 400, ""},
			{"bad wait", "POST", tp + "/navigate", sandboxapi.NavigateRequest{URL: site.URL, Wait: "forever"}, 400, ""},
			{"negative timeout", "POST", tp + "/navigate", sandboxapi.NavigateRequest{URL: site.URL, TimeoutMS: -1}, 400, ""},
			{"bad selector", "POST", tp + "/click", sandboxapi.ClickRequest{Selector: "##"}, 400, "not valid CSS"},
			{"selector and node", "POST", tp + "/click", sandboxapi.ClickRequest{Selector: "#go", NodeID: 3}, 400, ""},
			{"no target", "POST", tp + "/click", sandboxapi.ClickRequest{}, 400, ""},
			{"no match", "POST", tp + "/click", sandboxapi.ClickRequest{Selector: "#nothing", TimeoutMS: 100}, 404, "no element"},
			{"unknown node", "POST", tp + "/click", sandboxapi.ClickRequest{NodeID: 987654321}, 404, ""},
			{"invisible element", "POST", tp + "/click", sandboxapi.ClickRequest{Selector: "#hidden"}, 422, "visible"},
			{"type into a heading", "POST", tp + "/type", sandboxapi.TypeRequest{Selector: "#msg", Text: "x"}, 422, ""},
			{"script throws", "POST", tp + "/eval", sandboxapi.EvalRequest{Expression: "throw new Error('boom')"}, 422, "boom"},
			{"promise rejects", "POST", tp + "/eval", sandboxapi.EvalRequest{Expression: "Promise.reject(new TypeError('nope'))"}, 422, "nope"},
			{"syntax error", "POST", tp + "/eval", sandboxapi.EvalRequest{Expression: "let = ;"}, 422, "SyntaxError"},
			{"endless script", "POST", tp + "/eval", sandboxapi.EvalRequest{Expression: "while (true) {}", TimeoutMS: 300}, 504, ""},
			{"huge result", "POST", tp + "/eval", sandboxapi.EvalRequest{Expression: "'x'.repeat(9 << 20)"}, 413, ""},
			{"not JSON", "POST", tp + "/eval", sandboxapi.EvalRequest{Expression: "window"}, 422, ""},
			{"empty expression", "POST", tp + "/eval", sandboxapi.EvalRequest{Expression: " "}, 400, ""},
			{"bad max_bytes", "GET", tp + "/text?max_bytes=abc", nil, 400, ""},
			{"zero max_nodes", "GET", tp + "/ax?max_nodes=0", nil, 400, ""},
			{"bad full_page", "GET", tp + "/screenshot?full_page=maybe", nil, 400, ""},
			{"wait for nothing", "POST", tp + "/wait", sandboxapi.WaitRequest{}, 400, ""},
			{"bad window size", "POST", "/v1/browser/start", sandboxapi.BrowserStartRequest{Width: 5}, 400, ""},
			{"bad display", "POST", "/v1/browser/start", sandboxapi.BrowserStartRequest{Display: "; rm -rf /"}, 400, ""},
			{"another mode", "POST", "/v1/browser/start", map[string]any{"headless": false, "display": ":77"}, 409, "stop it first"},
			{"refused connection", "POST", tp + "/navigate", sandboxapi.NavigateRequest{URL: closedURL}, 502, "ERR_CONNECTION_REFUSED"},
		} {
			resp, body := a.do(c.method, c.path, c.body)
			wantStatus(t, c.name, resp.StatusCode, body, c.want)
			if c.detail != "" && !strings.Contains(string(body), c.detail) {
				t.Errorf("%s: body %s; want it to mention %q", c.name, body, c.detail)
			}
		}
		// The tab survives all of it, the endless script included.
		must(t, a, "POST", "/v1/browser/tabs/"+id+"/navigate", sandboxapi.NavigateRequest{URL: site.URL + "/"}, 200, nil)
		if got := pageText(t, a, id); !strings.Contains(got, "before") {
			t.Errorf("text after the errors = %q; want the page back", got)
		}
	})

	t.Run("text is bounded", func(t *testing.T) {
		var pt sandboxapi.PageText
		must(t, a, "GET", "/v1/browser/tabs/"+id+"/text?max_bytes=5", nil, 200, &pt)
		if pt.Text != "befor" || !pt.Truncated {
			t.Errorf("text with max_bytes=5 = %+v; want \"befor\", truncated", pt)
		}
		var tree sandboxapi.AXTree
		must(t, a, "GET", "/v1/browser/tabs/"+id+"/ax?max_nodes=2", nil, 200, &tree)
		if len(tree.Nodes) != 2 || !tree.Truncated || tree.Nodes[0].Role != "RootWebArea" {
			t.Errorf("ax with max_nodes=2 = %+v; want the root and one more, truncated", tree)
		}
	})

	t.Run("concurrent clients", func(t *testing.T) {
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		for i := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs <- concurrentTab(a, site.URL, i+1)
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Error(err)
			}
		}
	})

	t.Run("tabs list and close", func(t *testing.T) {
		var list sandboxapi.TabList
		must(t, a, "GET", "/v1/browser/tabs", nil, 200, &list)
		if len(list.Tabs) != 1 || list.Tabs[0].ID != id || list.Tabs[0].Title != "Corral test" {
			t.Fatalf("tabs = %+v; want only %s", list.Tabs, id)
		}
		var other sandboxapi.Tab
		must(t, a, "POST", "/v1/browser/tabs", nil, 201, &other)
		if other.URL != "about:blank" {
			t.Errorf("tab opened without a URL shows %q; want about:blank", other.URL)
		}
		must(t, a, "DELETE", "/v1/browser/tabs/"+other.ID, nil, 204, nil)
		resp, body := a.do("GET", "/v1/browser/tabs/"+other.ID+"/text", nil)
		wantStatus(t, "text of a closed tab", resp.StatusCode, body, 404)
	})

	t.Run("stop kills the process group", func(t *testing.T) {
		must(t, a, "GET", "/v1/browser", nil, 200, &st)
		pid := st.PID
		if len(groupAlive(pid)) < 2 {
			t.Fatalf("browser %d runs %v in its group; want it and its helpers", pid, groupAlive(pid))
		}
		must(t, a, "POST", "/v1/browser/stop", nil, 204, nil)
		if left := groupAlive(pid); len(left) > 0 {
			t.Errorf("after stop, processes %v of the browser's group %d are alive", left, pid)
		}
		must(t, a, "GET", "/v1/browser", nil, 200, &st)
		if st.Running || st.Tabs != 0 {
			t.Errorf("status after stop = %+v; want stopped with no tabs", st)
		}
		resp, body := a.do("GET", "/v1/browser/tabs/"+id+"/text", nil)
		wantStatus(t, "text after stop", resp.StatusCode, body, 404)
		must(t, a, "POST", "/v1/browser/stop", nil, 204, nil) // idempotent
	})

	t.Run("a killed browser is replaced", func(t *testing.T) {
		must(t, a, "POST", "/v1/browser/start", nil, 200, &st)
		var t1 sandboxapi.Tab
		must(t, a, "POST", "/v1/browser/tabs", sandboxapi.TabRequest{URL: site.URL + "/"}, 201, &t1)
		if err := syscall.Kill(st.PID, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		waitUntil(t, "the daemon sees the browser gone", func() bool {
			var now sandboxapi.Browser
			must(t, a, "GET", "/v1/browser", nil, 200, &now)
			return !now.Running
		})
		resp, body := a.do("GET", "/v1/browser/tabs/"+t1.ID+"/text", nil)
		wantStatus(t, "text in a tab of the killed browser", resp.StatusCode, body, 404)
		var t2 sandboxapi.Tab
		must(t, a, "POST", "/v1/browser/tabs", sandboxapi.TabRequest{URL: site.URL + "/"}, 201, &t2)
		must(t, a, "POST", "/v1/browser/tabs/"+t2.ID+"/click", sandboxapi.ClickRequest{Selector: "#go"}, 200, nil)
		if got := pageText(t, a, t2.ID); !strings.Contains(got, "clicked 1") {
			t.Errorf("text in the new browser = %q", got)
		}
		if left := groupAlive(st.PID); len(left) > 0 {
			t.Errorf("processes %v of the killed browser's group are alive", left)
		}
	})
}

// concurrentTab drives its own tab: open, click n times, read.
func concurrentTab(a *api, site string, n int) error {
	code, body, err := bcall(a, "POST", "/v1/browser/tabs", sandboxapi.TabRequest{URL: site + "/"})
	if err != nil || code != 201 {
		return fmt.Errorf("open: %d %s %v", code, body, err)
	}
	var tab sandboxapi.Tab
	_ = json.Unmarshal(body, &tab)
	defer bcall(a, "DELETE", "/v1/browser/tabs/"+tab.ID, nil)
	for range n {
		if code, body, err := bcall(a, "POST", "/v1/browser/tabs/"+tab.ID+"/click", sandboxapi.ClickRequest{Selector: "#go"}); err != nil || code != 200 {
			return fmt.Errorf("click: %d %s %v", code, body, err)
		}
	}
	code, body, err = bcall(a, "GET", "/v1/browser/tabs/"+tab.ID+"/text", nil)
	if err != nil || code != 200 {
		return fmt.Errorf("text: %d %s %v", code, body, err)
	}
	var pt sandboxapi.PageText
	_ = json.Unmarshal(body, &pt)
	if want := fmt.Sprintf("clicked %d", n); !strings.Contains(pt.Text, want) {
		return fmt.Errorf("tab %d: text %q; want %q", n, pt.Text, want)
	}
	return nil
}

// TestBrowserStoppedWithDaemon checks that shutting the daemon down ends
// the browser and every process of its group.
func TestBrowserStoppedWithDaemon(t *testing.T) {
	needBrowser(t)
	a := newAPI(t)
	var st sandboxapi.Browser
	must(t, a, "POST", "/v1/browser/start", `{}`, 200, &st)
	if len(groupAlive(st.PID)) == 0 {
		t.Fatalf("browser %d not running", st.PID)
	}
	a.d.Server.Close()
	if left := groupAlive(st.PID); len(left) > 0 {
		t.Errorf("after daemon shutdown, processes %v of the browser's group are alive", left)
	}
}

// TestBrowserOnDisplay runs the browser with a window on an X display.
func TestBrowserOnDisplay(t *testing.T) {
	needBrowser(t)
	xvfb, err := exec.LookPath("Xvfb")
	if err != nil {
		testenv.Unavailable(t, "no Xvfb to give the browser a display")
	}
	// Xvfb picks a free display itself (-displayfd): the desktop tests
	// running at the same time hold some.
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	x := exec.Command(xvfb, "-displayfd", "3", "-screen", "0", "1024x768x24", "-nolisten", "tcp")
	x.ExtraFiles, x.Stderr = []*os.File{w}, &stderr
	if err := x.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	t.Cleanup(func() {
		_ = x.Process.Kill()
		_ = x.Wait()
	})
	line, err := bufio.NewReader(r).ReadString('\n') // EOF if Xvfb dies first
	r.Close()
	num := strings.TrimSpace(line)
	if _, perr := strconv.Atoi(num); err != nil || perr != nil {
		_ = x.Process.Kill()
		_ = x.Wait()
		t.Fatalf("Xvfb did not report its display (%q, %v): %s", line, err, stderr.String())
	}
	waitUntil(t, "Xvfb accepts connections", func() bool { return browser.XServerUp(num) })
	site, _ := testSite(t)
	a := newAPI(t)
	var st sandboxapi.Browser
	must(t, a, "POST", "/v1/browser/start", sandboxapi.BrowserStartRequest{Display: ":" + num, Width: 800, Height: 600}, 200, &st)
	if st.Headless || st.Display != ":"+num {
		t.Fatalf("start on a display = %+v; want a window on :%s", st, num)
	}
	var tab sandboxapi.Tab
	must(t, a, "POST", "/v1/browser/tabs", sandboxapi.TabRequest{URL: site.URL + "/"}, 201, &tab)
	must(t, a, "POST", "/v1/browser/tabs/"+tab.ID+"/click", sandboxapi.ClickRequest{Selector: "#go"}, 200, nil)
	if got := pageText(t, a, tab.ID); !strings.Contains(got, "clicked 1") {
		t.Errorf("text = %q; want the click's effect", got)
	}
	resp, body := a.do("GET", "/v1/browser/tabs/"+tab.ID+"/screenshot", nil)
	if _, err := png.Decode(bytes.NewReader(body)); resp.StatusCode != 200 || err != nil {
		t.Errorf("screenshot on a display: %d, %v", resp.StatusCode, err)
	}
	must(t, a, "POST", "/v1/browser/stop", nil, 204, nil)
}
