package sandboxd_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/corral-sh/corral/api/sandboxapi"
	"github.com/corral-sh/corral/internal/sandboxd"
	"github.com/corral-sh/corral/internal/sandboxd/sandboxdtest"
)

// fsd is a daemon under test with helpers for the files API.
type fsd struct {
	t testing.TB
	*sandboxdtest.Daemon
}

func startFS(t testing.TB) *fsd {
	t.Helper()
	return &fsd{t: t, Daemon: sandboxdtest.Start(t, sandboxdtest.Options{})}
}

// do sends a request to route with query kv pairs and returns the status
// and body.
func (d *fsd) do(method, route string, body io.Reader, kv ...string) (int, []byte) {
	d.t.Helper()
	resp := d.send(method, route, body, nil, kv...)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		d.t.Fatalf("%s %s: reading body: %v", method, route, err)
	}
	return resp.StatusCode, b
}

func (d *fsd) send(method, route string, body io.Reader, hdr http.Header, kv ...string) *http.Response {
	d.t.Helper()
	q := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		q.Set(kv[i], kv[i+1])
	}
	u := d.URL + route
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	req, err := http.NewRequest(method, u, body)
	if err != nil {
		d.t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	resp, err := d.HTTP.Do(req)
	if err != nil {
		d.t.Fatalf("%s %s: %v", method, u, err)
	}
	return resp
}

// post sends v as JSON.
func (d *fsd) post(route string, v any) (int, []byte) {
	d.t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		d.t.Fatal(err)
	}
	return d.do(http.MethodPost, route, bytes.NewReader(b))
}

func (d *fsd) put(p, content string, kv ...string) (int, []byte) {
	d.t.Helper()
	return d.do(http.MethodPut, "/v1/fs/file", strings.NewReader(content), append([]string{"path", p}, kv...)...)
}

// host returns the host path of sandbox path p.
func (d *fsd) host(p string) string { return filepath.Join(d.Root, filepath.FromSlash(p)) }

// write creates a file directly on disk, parents included.
func (d *fsd) write(p, content string) {
	d.t.Helper()
	h := d.host(p)
	if err := os.MkdirAll(filepath.Dir(h), 0o755); err != nil {
		d.t.Fatal(err)
	}
	if err := os.WriteFile(h, []byte(content), 0o644); err != nil {
		d.t.Fatal(err)
	}
}

func (d *fsd) symlink(target, p string) {
	d.t.Helper()
	if err := os.Symlink(target, d.host(p)); err != nil {
		d.t.Fatal(err)
	}
}

// noTemps fails if an atomic write's temporary file is left in the root.
func (d *fsd) noTemps() {
	d.t.Helper()
	filepath.WalkDir(d.Root, func(p string, e fs.DirEntry, err error) error {
		if err == nil && strings.Contains(e.Name(), ".corral-tmp-") {
			d.t.Errorf("temporary file left behind: %s", p)
		}
		return nil
	})
}

func decode[T any](t testing.TB, b []byte) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("decoding %s: %v", b, err)
	}
	return v
}

// wantStatus checks a status and, for errors, the problem+json body.
func wantStatus(t testing.TB, what string, got int, body []byte, want int) {
	t.Helper()
	if got != want {
		t.Errorf("%s: status %d (%s); want %d", what, got, bytes.TrimSpace(body), want)
		return
	}
	if want >= 400 {
		var p struct{ Status int }
		if err := json.Unmarshal(body, &p); err != nil || p.Status != want {
			t.Errorf("%s: body %s is not a problem with status %d", what, body, want)
		}
	}
}

func TestFilesReadWrite(t *testing.T) {
	d := startFS(t)
	code, body := d.put("/work/sub/a.txt", "hello")
	wantStatus(t, "PUT new file", code, body, 200)
	fi := decode[sandboxapi.FileInfo](t, body)
	want := sandboxapi.FileInfo{Path: "/work/sub/a.txt", Name: "a.txt", Type: "file", Size: 5, Mode: "0644"}
	if fi.Path != want.Path || fi.Name != want.Name || fi.Type != want.Type || fi.Size != want.Size || fi.Mode != want.Mode || fi.MTime.IsZero() {
		t.Errorf("PUT FileInfo = %+v; want %+v", fi, want)
	}
	code, body = d.do("GET", "/v1/fs/file", nil, "path", "/work/sub/a.txt")
	if code != 200 || string(body) != "hello" {
		t.Errorf("GET = %d %q; want 200 %q", code, body, "hello")
	}

	code, body = d.put("/x.sh", "#!/bin/sh\n", "mode", "0755")
	if fi := decode[sandboxapi.FileInfo](t, body); code != 200 || fi.Mode != "0755" {
		t.Errorf("PUT mode=0755: %d mode %q; want 200 0755", code, fi.Mode)
	}
	code, body = d.put("/x.sh", "#!/bin/sh\nexit 0\n")
	if fi := decode[sandboxapi.FileInfo](t, body); code != 200 || fi.Mode != "0755" || fi.Size != 17 {
		t.Errorf("PUT over existing: %d %+v; want mode kept 0755, size 17", code, fi)
	}
	d.write("/dir/f", "x")
	for _, tt := range []struct {
		name   string
		method string
		kv     []string
		want   int
	}{
		{"GET missing", "GET", []string{"path", "/nope"}, 404},
		{"GET directory", "GET", []string{"path", "/dir"}, 400},
		{"GET root", "GET", []string{"path", "/"}, 400},
		{"GET without path", "GET", nil, 400},
		{"GET relative path", "GET", []string{"path", "dir/f"}, 400},
		{"GET under a file", "GET", []string{"path", "/dir/f/x"}, 404},
		{"PUT bad mode", "PUT", []string{"path", "/m", "mode", "0999"}, 400},
		{"PUT mode too big", "PUT", []string{"path", "/m", "mode", "01777"}, 400},
		{"PUT mode not a number", "PUT", []string{"path", "/m", "mode", "rw"}, 400},
		{"PUT onto a directory", "PUT", []string{"path", "/dir"}, 400},
		{"PUT onto the root", "PUT", []string{"path", "/"}, 400},
		{"PUT under a file", "PUT", []string{"path", "/dir/f/x"}, 409},
	} {
		code, body := d.do(tt.method, "/v1/fs/file", strings.NewReader("data"), tt.kv...)
		wantStatus(t, tt.name, code, body, tt.want)
	}
	if _, err := os.Stat(d.host("/m")); !os.IsNotExist(err) {
		t.Errorf("a refused PUT created the file: stat err %v", err)
	}
	d.noTemps()
}

func TestFilesRange(t *testing.T) {
	d := startFS(t)
	d.write("/r.txt", "0123456789")
	for _, tt := range []struct {
		rng, want string
		status    int
	}{
		{"bytes=2-5", "2345", 206},
		{"bytes=-3", "789", 206},
		{"bytes=7-", "789", 206},
		{"bytes=20-30", "", 416},
	} {
		resp := d.send("GET", "/v1/fs/file", nil, http.Header{"Range": {tt.rng}}, "path", "/r.txt")
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tt.status || (tt.status == 206 && string(b) != tt.want) {
			t.Errorf("Range %s = %d %q; want %d %q", tt.rng, resp.StatusCode, b, tt.status, tt.want)
		}
	}
	resp := d.send("GET", "/v1/fs/file", nil, nil, "path", "/r.txt")
	resp.Body.Close()
	etag := resp.Header.Get("ETag")
	resp = d.send("GET", "/v1/fs/file", nil, http.Header{"If-None-Match": {etag}}, "path", "/r.txt")
	resp.Body.Close()
	if etag == "" || resp.StatusCode != 304 {
		t.Errorf("If-None-Match %q = %d; want 304", etag, resp.StatusCode)
	}
}

func TestFilesStat(t *testing.T) {
	d := startFS(t)
	d.write("/dir/f.txt", "abc")
	d.symlink("dir/f.txt", "/link")
	for _, tt := range []struct {
		path, typ, target string
		size              int64
	}{
		{"/dir/f.txt", "file", "", 3},
		{"/dir", "dir", "", -1},
		{"/link", "symlink", "dir/f.txt", 9},
		{"/", "dir", "", -1},
	} {
		code, body := d.do("GET", "/v1/fs/stat", nil, "path", tt.path)
		fi := decode[sandboxapi.FileInfo](t, body)
		if code != 200 || fi.Type != tt.typ || fi.Target != tt.target || fi.Path != tt.path || (tt.size >= 0 && fi.Size != tt.size) {
			t.Errorf("stat %s = %d %+v; want type %s target %q size %d", tt.path, code, fi, tt.typ, tt.target, tt.size)
		}
	}
	code, body := d.do("GET", "/v1/fs/stat", nil, "path", "/missing")
	wantStatus(t, "stat missing", code, body, 404)
}

func TestFilesList(t *testing.T) {
	d := startFS(t)
	for _, p := range []string{"/p/b.txt", "/p/a/x.txt", "/p/a/deep/y.txt", "/p/a-c.txt"} {
		d.write(p, "1")
	}
	d.symlink("a", "/p/link")
	paths := func(b []byte) string {
		l := decode[sandboxapi.FileList](t, b)
		var out []string
		for _, e := range l.Entries {
			out = append(out, e.Path+":"+e.Type)
		}
		return strings.Join(out, " ")
	}
	for _, tt := range []struct{ depth, want string }{
		{"", "/p/a:dir /p/a-c.txt:file /p/b.txt:file /p/link:symlink"},
		{"2", "/p/a:dir /p/a/deep:dir /p/a/x.txt:file /p/a-c.txt:file /p/b.txt:file /p/link:symlink"},
		{"20", "/p/a:dir /p/a/deep:dir /p/a/deep/y.txt:file /p/a/x.txt:file /p/a-c.txt:file /p/b.txt:file /p/link:symlink"},
	} {
		code, body := d.do("GET", "/v1/fs/list", nil, "path", "/p", "depth", tt.depth)
		if got := paths(body); code != 200 || got != tt.want {
			t.Errorf("list depth=%q = %d %s\nwant %s", tt.depth, code, got, tt.want)
		}
	}
	code, body := d.do("GET", "/v1/fs/list", nil, "path", "/p/link")
	if got := paths(body); code != 200 || got != "/p/link/deep:dir /p/link/x.txt:file" {
		t.Errorf("list through a symlink = %d %s", code, got)
	}
	for _, tt := range []struct {
		name string
		kv   []string
		want int
	}{
		{"depth 0", []string{"path", "/p", "depth", "0"}, 400},
		{"depth 21", []string{"path", "/p", "depth", "21"}, 400},
		{"depth not a number", []string{"path", "/p", "depth", "x"}, 400},
		{"a file", []string{"path", "/p/b.txt"}, 400},
		{"missing", []string{"path", "/nope"}, 404},
	} {
		code, body := d.do("GET", "/v1/fs/list", nil, tt.kv...)
		wantStatus(t, "list "+tt.name, code, body, tt.want)
	}
}

func TestFilesMkdir(t *testing.T) {
	d := startFS(t)
	d.write("/file", "x")
	for _, tt := range []struct {
		name string
		body string
		want int
	}{
		{"new", `{"path":"/a"}`, 201},
		{"exists", `{"path":"/a"}`, 409},
		{"missing parent", `{"path":"/b/c"}`, 404},
		{"parents", `{"path":"/b/c/d","parents":true}`, 201},
		{"parents, exists", `{"path":"/b/c/d","parents":true}`, 200},
		{"parents, a file", `{"path":"/file","parents":true}`, 409},
		{"under a file", `{"path":"/file/x","parents":true}`, 409},
		{"the root", `{"path":"/"}`, 409},
		{"unknown field", `{"path":"/z","mode":"0755"}`, 400},
		{"no path", `{}`, 400},
		{"not JSON", `path=/z`, 400},
	} {
		code, body := d.do("POST", "/v1/fs/mkdir", strings.NewReader(tt.body))
		wantStatus(t, "mkdir "+tt.name, code, body, tt.want)
		if code == 201 {
			if fi := decode[sandboxapi.FileInfo](t, body); fi.Type != "dir" {
				t.Errorf("mkdir %s: type %q; want dir", tt.name, fi.Type)
			}
		}
	}
	if fi, err := os.Stat(d.host("/b/c/d")); err != nil || !fi.IsDir() {
		t.Errorf("mkdir parents: stat = %v, %v; want a directory", fi, err)
	}
}

func TestFilesDelete(t *testing.T) {
	d := startFS(t)
	d.write("/f", "x")
	d.write("/full/a/b", "x")
	d.write("/target", "keep")
	d.symlink("target", "/link")
	for _, tt := range []struct {
		name string
		kv   []string
		want int
	}{
		{"file", []string{"path", "/f"}, 204},
		{"missing", []string{"path", "/f"}, 404},
		{"non-empty dir", []string{"path", "/full"}, 409},
		{"non-empty dir, recursive", []string{"path", "/full", "recursive", "true"}, 204},
		{"bad recursive", []string{"path", "/x", "recursive", "maybe"}, 400},
		{"a symlink", []string{"path", "/link"}, 204},
		{"the root", []string{"path", "/"}, 403},
		{"the root via ..", []string{"path", "/target/..", "recursive", "true"}, 403},
		{"no path", nil, 400},
	} {
		code, body := d.do("DELETE", "/v1/fs/file", nil, tt.kv...)
		wantStatus(t, "delete "+tt.name, code, body, tt.want)
	}
	if b, err := os.ReadFile(d.host("/target")); err != nil || string(b) != "keep" {
		t.Errorf("deleting a symlink touched its target: %q, %v", b, err)
	}
	if _, err := os.Stat(d.Root); err != nil {
		t.Errorf("root gone: %v", err)
	}
}

func TestFilesMove(t *testing.T) {
	d := startFS(t)
	d.write("/a.txt", "A")
	d.write("/b.txt", "B")
	d.write("/dir/x", "x")
	d.write("/other.txt", "o")
	for _, tt := range []struct {
		name string
		req  sandboxapi.MoveRequest
		want int
	}{
		{"onto existing", sandboxapi.MoveRequest{From: "/a.txt", To: "/b.txt"}, 409},
		{"overwrite", sandboxapi.MoveRequest{From: "/a.txt", To: "/b.txt", Overwrite: true}, 200},
		{"missing source", sandboxapi.MoveRequest{From: "/a.txt", To: "/c.txt"}, 404},
		{"new name", sandboxapi.MoveRequest{From: "/b.txt", To: "/dir/c.txt"}, 200},
		{"missing parent", sandboxapi.MoveRequest{From: "/dir/c.txt", To: "/nope/c.txt"}, 404},
		{"into itself", sandboxapi.MoveRequest{From: "/dir", To: "/dir/sub"}, 400},
		{"dir onto file", sandboxapi.MoveRequest{From: "/dir", To: "/other.txt", Overwrite: true}, 409},
		{"the root", sandboxapi.MoveRequest{From: "/", To: "/r"}, 403},
		{"onto the root", sandboxapi.MoveRequest{From: "/dir", To: "/", Overwrite: true}, 403},
		{"no paths", sandboxapi.MoveRequest{}, 400},
		{"directory", sandboxapi.MoveRequest{From: "/dir", To: "/dir2"}, 200},
	} {
		code, body := d.post("/v1/fs/move", tt.req)
		wantStatus(t, "move "+tt.name, code, body, tt.want)
	}
	if b, err := os.ReadFile(d.host("/dir2/c.txt")); err != nil || string(b) != "A" {
		t.Errorf("after moves /dir2/c.txt = %q, %v; want A", b, err)
	}
}

func TestFilesEdit(t *testing.T) {
	d := startFS(t)
	code, body := d.put("/e.go", "a := 1\nb := 1\nc := 2\n", "mode", "0600")
	wantStatus(t, "PUT", code, body, 200)
	for _, tt := range []struct {
		name string
		req  sandboxapi.EditRequest
		want int
		n    int
	}{
		{"unique", sandboxapi.EditRequest{Path: "/e.go", OldText: "c := 2", NewText: "c := 3"}, 200, 1},
		{"ambiguous", sandboxapi.EditRequest{Path: "/e.go", OldText: ":= 1", NewText: ":= 9"}, 409, 0},
		{"replace all", sandboxapi.EditRequest{Path: "/e.go", OldText: ":= 1", NewText: ":= 9", ReplaceAll: true}, 200, 2},
		{"not found", sandboxapi.EditRequest{Path: "/e.go", OldText: "zzz", NewText: "y"}, 409, 0},
		{"empty old_text", sandboxapi.EditRequest{Path: "/e.go", NewText: "y"}, 400, 0},
		{"missing file", sandboxapi.EditRequest{Path: "/nope", OldText: "x"}, 404, 0},
		{"a directory", sandboxapi.EditRequest{Path: "/", OldText: "x"}, 400, 0},
	} {
		code, body := d.post("/v1/fs/edit", tt.req)
		wantStatus(t, "edit "+tt.name, code, body, tt.want)
		if code == 200 {
			if got := decode[sandboxapi.EditResult](t, body).Replacements; got != tt.n {
				t.Errorf("edit %s: replacements %d; want %d", tt.name, got, tt.n)
			}
		}
	}
	b, _ := os.ReadFile(d.host("/e.go"))
	if want := "a := 9\nb := 9\nc := 3\n"; string(b) != want {
		t.Errorf("after edits: %q; want %q", b, want)
	}
	if fi, err := os.Stat(d.host("/e.go")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("edit changed the mode: %v, %v; want 0600", fi.Mode(), err)
	}
	d.noTemps()
}

func TestFilesSearch(t *testing.T) {
	d := startFS(t)
	d.write("/s/main.go", "package main\n\nfunc main() { println(\"needle\") }\n")
	d.write("/s/pkg/util.go", "package pkg\n// needle here\nvar x = 1 // needle again\n")
	d.write("/s/docs/readme.md", "a needle in docs\n")
	d.write("/s/bin.dat", "needle\x00binary")
	d.write("/s/.git/config", "needle")
	d.write("/s/long.txt", strings.Repeat("x", 100<<10)+"needle\nneedle short\n")
	type m struct {
		path string
		line int
	}
	for _, tt := range []struct {
		name      string
		req       sandboxapi.SearchRequest
		want      []m
		truncated bool
	}{
		{"all", sandboxapi.SearchRequest{Path: "/s", Pattern: "needle"},
			[]m{{"/s/docs/readme.md", 1}, {"/s/long.txt", 2}, {"/s/main.go", 3}, {"/s/pkg/util.go", 2}, {"/s/pkg/util.go", 3}}, false},
		{"glob on base name", sandboxapi.SearchRequest{Path: "/s", Pattern: "needle", Glob: "*.go"},
			[]m{{"/s/main.go", 3}, {"/s/pkg/util.go", 2}, {"/s/pkg/util.go", 3}}, false},
		{"glob with **", sandboxapi.SearchRequest{Path: "/s", Pattern: "needle", Glob: "docs/**/*.md"},
			[]m{{"/s/docs/readme.md", 1}}, false},
		{"max_results", sandboxapi.SearchRequest{Path: "/s", Pattern: "needle", MaxResults: 2},
			[]m{{"/s/docs/readme.md", 1}, {"/s/long.txt", 2}}, true},
		{"one file", sandboxapi.SearchRequest{Path: "/s/pkg/util.go", Pattern: `needle \w+`},
			[]m{{"/s/pkg/util.go", 2}, {"/s/pkg/util.go", 3}}, false},
	} {
		code, body := d.post("/v1/fs/search", tt.req)
		res := decode[sandboxapi.SearchResult](t, body)
		var got []m
		for _, x := range res.Matches {
			got = append(got, m{x.Path, x.Line})
		}
		if code != 200 || fmt.Sprint(got) != fmt.Sprint(tt.want) || res.Truncated != tt.truncated {
			t.Errorf("search %s = %d %v truncated %v; want %v truncated %v", tt.name, code, got, res.Truncated, tt.want, tt.truncated)
		}
	}
	_, body := d.post("/v1/fs/search", sandboxapi.SearchRequest{Path: "/s/main.go", Pattern: "needle"})
	if res := decode[sandboxapi.SearchResult](t, body); len(res.Matches) != 1 || res.Matches[0].Column != 24 || res.Matches[0].Text != `func main() { println("needle") }` {
		t.Errorf("search match = %+v; want column 24 and the whole line", res.Matches)
	}
	for _, tt := range []struct {
		name string
		body string
		want int
	}{
		{"bad regexp", `{"path":"/s","pattern":"("}`, 400},
		{"bad glob", `{"path":"/s","pattern":"x","glob":"[a"}`, 400},
		{"negative max", `{"path":"/s","pattern":"x","max_results":-1}`, 400},
		{"no pattern", `{"path":"/s"}`, 400},
		{"missing path", `{"path":"/nope","pattern":"x"}`, 404},
		{"unknown field", `{"path":"/s","pattern":"x","regex":true}`, 400},
	} {
		code, body := d.do("POST", "/v1/fs/search", strings.NewReader(tt.body))
		wantStatus(t, "search "+tt.name, code, body, tt.want)
	}
}

// TestFilesAtomicWrite rewrites a file while readers read it: every read
// sees one whole version, never a mix or a prefix.
func TestFilesAtomicWrite(t *testing.T) {
	d := startFS(t)
	const size = 1 << 20
	versions := []string{strings.Repeat("a", size), strings.Repeat("b", size)}
	d.put("/atomic", versions[0])
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 2 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				code, b := d.do("GET", "/v1/fs/file", nil, "path", "/atomic")
				if code != 200 || len(b) != size || strings.Count(string(b), string(b[:1])) != size {
					t.Errorf("reader saw %d bytes (status %d), not one whole version", len(b), code)
					return
				}
			}
		})
	}
	for i := range 30 {
		if code, body := d.put("/atomic", versions[i%2]); code != 200 {
			t.Fatalf("PUT: %d %s", code, body)
		}
	}
	close(stop)
	wg.Wait()
	d.noTemps()
}

// TestFilesConcurrentWriters has writers race on one path: the result is
// exactly one writer's content.
func TestFilesConcurrentWriters(t *testing.T) {
	d := startFS(t)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			content := strings.Repeat(string(rune('a'+i)), 256<<10)
			// One connection each, never pooled: a connection dialed but
			// left unused would hold up the daemon's shutdown.
			resp := d.send("PUT", "/v1/fs/file", strings.NewReader(content), http.Header{"Connection": {"close"}}, "path", "/race/f")
			resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Errorf("writer %d: status %d", i, resp.StatusCode)
			}
		})
	}
	wg.Wait()
	b, err := os.ReadFile(d.host("/race/f"))
	if err != nil || len(b) != 256<<10 || strings.Count(string(b), string(b[:1])) != len(b) {
		t.Errorf("after racing writers: %d bytes, %v; want one writer's 256 KiB", len(b), err)
	}
	d.noTemps()
}

func BenchmarkUpload64MiB(b *testing.B) {
	d := startFS(b)
	data := bytes.Repeat([]byte("0123456789abcdef"), 4<<20)
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for b.Loop() {
		resp := d.send("PUT", "/v1/fs/file", bytes.NewReader(data), nil, "path", "/bench/up.bin")
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			b.Fatalf("PUT: %d", resp.StatusCode)
		}
	}
}

func BenchmarkDownload64MiB(b *testing.B) {
	d := startFS(b)
	data := bytes.Repeat([]byte("0123456789abcdef"), 4<<20)
	if err := os.WriteFile(d.host("/down.bin"), data, 0o644); err != nil {
		b.Fatal(err)
	}
	buf := make([]byte, 1<<20)
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for b.Loop() {
		resp := d.send("GET", "/v1/fs/file", nil, nil, "path", "/down.bin")
		n, err := io.CopyBuffer(io.Discard, struct{ io.Reader }{resp.Body}, buf)
		resp.Body.Close()
		if err != nil || n != int64(len(data)) {
			b.Fatalf("GET: %d bytes, %v", n, err)
		}
	}
}

// TestFilesPseudoFiles reads /proc files, which report size 0 but have
// content, through a daemon rooted at "/".
func TestFilesPseudoFiles(t *testing.T) {
	d := sandboxdtest.Start(t, sandboxdtest.Options{Config: sandboxd.Config{Root: "/"}})
	resp, err := d.HTTP.Get(d.URL + "/v1/fs/file?path=/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || !strings.Contains(string(body), "Pid:") {
		t.Errorf("GET /proc/self/status = %d %q; want its content", resp.StatusCode, body)
	}
}
