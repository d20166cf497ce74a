package sandboxd_test

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/corral-sh/corral/api/sandboxapi"
)

// hostileFS starts a daemon whose root holds symlinks out of it, to a
// directory outside (by absolute and by relative target) and to /etc, a
// symlink loop, and a friendly symlink inside.
func hostileFS(t *testing.T) (d *fsd, outside string) {
	t.Helper()
	d = startFS(t)
	outside = t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret"), []byte("secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	rel, err := filepath.Rel(d.Root, outside)
	if err != nil {
		t.Fatal(err)
	}
	d.write("/in/f.txt", "inside")
	d.symlink("/etc", "/etc-link")
	d.symlink(outside, "/out-abs")
	d.symlink(rel, "/out-rel")
	d.symlink(rel+"/secret", "/secret-link")
	d.symlink("loop-b", "/loop-a")
	d.symlink("loop-a", "/loop-b")
	d.symlink("in", "/in-link")
	return d, outside
}

// TestFilesHostilePaths sends every route paths that try to leave the root:
// `..`, symlinks out (absolute and relative), loops and NUL bytes.
func TestFilesHostilePaths(t *testing.T) {
	d, outside := hostileFS(t)
	escapes := []string{
		"/../../../etc/passwd",
		"/in/../../etc/passwd",
		"/etc-link/passwd",
		"/out-abs/secret",
		"/out-rel/secret",
		"/secret-link",
		"/in-link/../../x",
	}
	type call struct {
		name   string
		method string
		route  string
		kv     func(p string) []string
		body   func(p string) string
	}
	q := func(p string) []string { return []string{"path", p} }
	calls := []call{
		{"read", "GET", "/v1/fs/file", q, nil},
		{"write", "PUT", "/v1/fs/file", q, func(string) string { return "pwned" }},
		{"delete", "DELETE", "/v1/fs/file", func(p string) []string { return []string{"path", p, "recursive", "true"} }, nil},
		{"stat", "GET", "/v1/fs/stat", q, nil},
		{"list", "GET", "/v1/fs/list", q, nil},
		{"archive", "GET", "/v1/fs/archive", q, nil},
		{"extract", "PUT", "/v1/fs/archive", q, func(string) string { return "" }},
		{"watch", "GET", "/v1/fs/watch", q, nil},
		{"mkdir", "POST", "/v1/fs/mkdir", nil, func(p string) string { return fmt.Sprintf(`{"path":%q,"parents":true}`, p) }},
		{"move from", "POST", "/v1/fs/move", nil, func(p string) string { return fmt.Sprintf(`{"from":%q,"to":"/moved"}`, p) }},
		{"move to", "POST", "/v1/fs/move", nil, func(p string) string { return fmt.Sprintf(`{"from":"/in/f.txt","to":%q,"overwrite":true}`, p) }},
		{"search", "POST", "/v1/fs/search", nil, func(p string) string { return fmt.Sprintf(`{"path":%q,"pattern":"."}`, p) }},
		{"edit", "POST", "/v1/fs/edit", nil, func(p string) string { return fmt.Sprintf(`{"path":%q,"old_text":"secret","new_text":"x"}`, p) }},
	}
	for _, c := range calls {
		for _, p := range escapes {
			if c.name == "stat" && p == "/secret-link" {
				continue // lstat of the link itself is allowed: it describes, not follows
			}
			if (c.name == "delete" || strings.HasPrefix(c.name, "move")) && p == "/secret-link" {
				continue // these act on the link itself; checked below
			}
			var kv []string
			if c.kv != nil {
				kv = c.kv(p)
			}
			var body *strings.Reader
			if c.body != nil {
				body = strings.NewReader(c.body(p))
			} else {
				body = strings.NewReader("")
			}
			code, b := d.do(c.method, c.route, body, kv...)
			wantStatus(t, fmt.Sprintf("%s %q", c.name, p), code, b, 403)
		}
	}
	for _, tt := range []struct {
		name string
		kv   []string
		want int
	}{
		{"NUL byte", []string{"path", "/in/f.txt\x00/etc/passwd"}, 400},
		{"loop", []string{"path", "/loop-a"}, 400},
		{"through a loop", []string{"path", "/loop-a/x"}, 400},
		{"relative", []string{"path", "../etc/passwd"}, 400},
	} {
		code, b := d.do("GET", "/v1/fs/file", nil, tt.kv...)
		wantStatus(t, "read "+tt.name, code, b, tt.want)
	}
	code, b := d.do("GET", "/v1/fs/stat", nil, "path", "/loop-a")
	if fi := decode[sandboxapi.FileInfo](t, b); code != 200 || fi.Type != "symlink" || fi.Target != "loop-b" {
		t.Errorf("stat of a looping symlink = %d %+v; want the link described", code, fi)
	}

	// Walks (list, search) describe symlinks out and never enter them.
	code, b = d.do("GET", "/v1/fs/list", nil, "path", "/", "depth", "5")
	if code != 200 {
		t.Fatalf("list / = %d %s", code, b)
	}
	for _, e := range decode[sandboxapi.FileList](t, b).Entries {
		if strings.HasPrefix(e.Path, "/etc-link/") || strings.HasPrefix(e.Path, "/out-abs/") || strings.HasPrefix(e.Path, "/out-rel/") {
			t.Errorf("list of / went through a symlink out: %s", e.Path)
		}
	}
	code, b = d.post("/v1/fs/search", sandboxapi.SearchRequest{Path: "/", Pattern: "secret|root:"})
	if res := decode[sandboxapi.SearchResult](t, b); code != 200 || len(res.Matches) != 0 {
		t.Errorf("search of / = %d %+v; want no matches from behind symlinks out", code, res.Matches)
	}

	// Acting on an escaping symlink itself is fine and leaves its target be.
	code, b = d.post("/v1/fs/move", sandboxapi.MoveRequest{From: "/secret-link", To: "/moved-link"})
	wantStatus(t, "move the link itself", code, b, 200)
	code, b = d.do("DELETE", "/v1/fs/file", nil, "path", "/moved-link")
	wantStatus(t, "delete the link itself", code, b, 204)
	code, b = d.do("DELETE", "/v1/fs/file", nil, "path", "/out-abs", "recursive", "true")
	wantStatus(t, "delete a symlinked dir, recursively", code, b, 204)

	entries, err := os.ReadDir(outside)
	if err != nil || len(entries) != 1 || entries[0].Name() != "secret" {
		t.Errorf("outside the root changed: %v, %v; want just secret", entries, err)
	}
	if s, _ := os.ReadFile(filepath.Join(outside, "secret")); string(s) != "secret" {
		t.Errorf("outside secret = %q; want it untouched", s)
	}
	if _, err := os.Stat("/etc/pwned"); err == nil {
		t.Errorf("/etc/pwned exists")
	}
	// A friendly symlink inside the root works, for reads and writes.
	code, b = d.put("/in-link/g.txt", "through a link")
	wantStatus(t, "write through an inside symlink", code, b, 200)
	if s, _ := os.ReadFile(d.host("/in/g.txt")); string(s) != "through a link" {
		t.Errorf("write through /in-link landed elsewhere: /in/g.txt = %q", s)
	}
}

// TestFilesAbsoluteSymlinkInside follows an absolute symlink whose target
// lies inside the root, as a process in the sandbox would.
func TestFilesAbsoluteSymlinkInside(t *testing.T) {
	d := startFS(t)
	d.write("/data/f.txt", "data")
	root, err := filepath.EvalSymlinks(d.Root)
	if err != nil {
		t.Fatal(err)
	}
	d.symlink(filepath.Join(root, "data"), "/abs-in")
	code, b := d.do("GET", "/v1/fs/file", nil, "path", "/abs-in/f.txt")
	if code != 200 || string(b) != "data" {
		t.Errorf("read through an absolute inside symlink = %d %q; want 200 data", code, b)
	}
}

// TestFilesAbortedUpload cuts an upload off mid-body: the old content stays
// and no temporary file is left.
func TestFilesAbortedUpload(t *testing.T) {
	d := startFS(t)
	d.put("/up.txt", "old")
	for _, p := range []string{"/up.txt", "/new/fresh.txt"} {
		c, err := net.Dial("tcp", strings.TrimPrefix(d.URL, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(c, "PUT /v1/fs/file?path=%s HTTP/1.1\r\nHost: x\r\nContent-Length: 10000000\r\n\r\n", p)
		c.Write(make([]byte, 300<<10))
		time.Sleep(50 * time.Millisecond)
		c.Close()
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		var temps []string
		filepath.WalkDir(d.Root, func(p string, e os.DirEntry, err error) error {
			if err == nil && strings.Contains(e.Name(), ".corral-tmp-") {
				temps = append(temps, p)
			}
			return nil
		})
		if len(temps) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("temporary files left after aborted uploads: %v", temps)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if b, _ := os.ReadFile(d.host("/up.txt")); string(b) != "old" {
		t.Errorf("after an aborted upload /up.txt = %d bytes; want the old content", len(b))
	}
	if _, err := os.Stat(d.host("/new/fresh.txt")); !os.IsNotExist(err) {
		t.Errorf("an aborted upload created its file: %v", err)
	}
}

// TestFilesRequestTimeoutNoHang checks that a short upload body (fewer
// bytes than Content-Length, connection kept open) does not commit.
func TestFilesShortBody(t *testing.T) {
	d := startFS(t)
	c, err := net.Dial("tcp", strings.TrimPrefix(d.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "PUT /v1/fs/file?path=/short HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nabc")
	c.(*net.TCPConn).CloseWrite()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	line, _ := bufio.NewReader(c).ReadString('\n')
	if !strings.Contains(line, "400") {
		t.Errorf("short body answered %q; want a 400", line)
	}
	if _, err := os.Stat(d.host("/short")); !os.IsNotExist(err) {
		t.Errorf("a short body created the file: %v", err)
	}
}
