package sandboxd_test

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/corral-sh/corral/api/sandboxapi"
)

// tarEntry describes one entry of a test archive.
type tarEntry struct {
	name, body, link string
	typ              byte
	mode             int64
}

func makeTar(t testing.TB, gz bool, entries ...tarEntry) []byte {
	t.Helper()
	var buf bytes.Buffer
	var w io.Writer = &buf
	var zw *gzip.Writer
	if gz {
		zw = gzip.NewWriter(&buf)
		w = zw
	}
	tw := tar.NewWriter(w)
	for _, e := range entries {
		typ, mode := e.typ, e.mode
		if typ == 0 {
			typ = tar.TypeReg
		}
		if mode == 0 {
			mode = 0o644
		}
		h := &tar.Header{Name: e.name, Typeflag: typ, Mode: mode, Linkname: e.link, Size: int64(len(e.body))}
		if typ != tar.TypeReg {
			h.Size = 0
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Size > 0 {
			io.WriteString(tw, e.body)
		}
	}
	tw.Close()
	if zw != nil {
		zw.Close()
	}
	return buf.Bytes()
}

// readTar lists a tar(.gz) as "name type [target|content]" lines.
func readTar(t testing.TB, b []byte, gz bool) []string {
	t.Helper()
	var r io.Reader = bytes.NewReader(b)
	if gz {
		zr, err := gzip.NewReader(r)
		if err != nil {
			t.Fatalf("gzip: %v", err)
		}
		r = zr
	}
	tr := tar.NewReader(r)
	var out []string
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatalf("tar: %v", err)
		}
		body, _ := io.ReadAll(tr)
		line := fmt.Sprintf("%s %c %s", h.Name, h.Typeflag, h.Linkname+string(body))
		if h.Typeflag == tar.TypeReg {
			line += fmt.Sprintf(" %o", h.Mode&0o777)
		}
		out = append(out, strings.TrimSpace(line))
	}
}

func archiveTree(d *fsd) {
	d.write("/proj/a.txt", "A")
	d.write("/proj/sub/b.sh", "B")
	os.Chmod(d.host("/proj/sub/b.sh"), 0o755)
	d.symlink("a.txt", "/proj/link")
	d.symlink("/etc", "/proj/etc-link")
}

func TestFilesArchiveDownload(t *testing.T) {
	d := startFS(t)
	archiveTree(d)
	want := []string{"a.txt 0 A 644", "etc-link 2 /etc", "link 2 a.txt", "sub/ 5", "sub/b.sh 0 B 755"}
	for _, format := range []string{"", "tar.gz", "tar"} {
		resp := d.send("GET", "/v1/fs/archive", nil, nil, "path", "/proj", "format", format)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("archive format=%q: %d %s", format, resp.StatusCode, b)
		}
		if got := readTar(t, b, format != "tar"); strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("archive format=%q = %q; want %q", format, got, want)
		}
		if cd := resp.Header.Get("Content-Disposition"); !strings.Contains(cd, "proj.") {
			t.Errorf("Content-Disposition %q; want a proj.* file name", cd)
		}
	}

	code, b := d.do("GET", "/v1/fs/archive", nil, "path", "/proj", "format", "zip")
	if code != 200 {
		t.Fatalf("zip: %d %s", code, b)
	}
	zr, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatalf("zip: %v", err)
	}
	var got []string
	for _, f := range zr.File {
		rc, _ := f.Open()
		body, _ := io.ReadAll(rc)
		rc.Close()
		kind := "f"
		switch {
		case f.Mode()&fs.ModeSymlink != 0:
			kind = "l"
		case f.Mode().IsDir():
			kind = "d"
		}
		got = append(got, fmt.Sprintf("%s %s %s", f.Name, kind, body))
	}
	wantZip := []string{"a.txt f A", "etc-link l /etc", "link l a.txt", "sub/ d ", "sub/b.sh f B"}
	if strings.Join(got, "|") != strings.Join(wantZip, "|") {
		t.Errorf("zip = %q; want %q", got, wantZip)
	}

	code, b = d.do("GET", "/v1/fs/archive", nil, "path", "/proj/a.txt", "format", "tar")
	if got := readTar(t, b, false); code != 200 || len(got) != 1 || got[0] != "a.txt 0 A 644" {
		t.Errorf("archive of one file = %d %q", code, got)
	}
	for _, tt := range []struct {
		name string
		kv   []string
		want int
	}{
		{"bad format", []string{"path", "/proj", "format", "rar"}, 400},
		{"missing", []string{"path", "/nope"}, 404},
		{"no path", nil, 400},
	} {
		code, b := d.do("GET", "/v1/fs/archive", nil, tt.kv...)
		wantStatus(t, "archive "+tt.name, code, b, tt.want)
	}
}

func TestFilesArchiveUpload(t *testing.T) {
	d := startFS(t)
	entries := []tarEntry{
		{name: "./", typ: tar.TypeDir, mode: 0o755},
		{name: "dir/", typ: tar.TypeDir, mode: 0o750},
		{name: "dir/f.txt", body: "hello", mode: 0o600},
		{name: "dir/link", typ: tar.TypeSymlink, link: "f.txt"},
		{name: "hard", typ: tar.TypeLink, link: "dir/f.txt"},
		{name: "implicit/parent/x", body: "x"},
		{name: "fifo", typ: tar.TypeFifo},
	}
	for _, gz := range []bool{false, true} {
		dest := fmt.Sprintf("/dest-%v", gz)
		code, b := d.do("PUT", "/v1/fs/archive", bytes.NewReader(makeTar(t, gz, entries...)), "path", dest)
		res := decode[sandboxapi.ArchiveResult](t, b)
		if code != 200 || res.Entries != 6 || res.Skipped != 1 {
			t.Fatalf("extract gzip=%v = %d %s; want 200, 6 entries, 1 skipped", gz, code, b)
		}
		for p, want := range map[string]string{"/dir/f.txt": "hello", "/dir/link": "hello", "/hard": "hello", "/implicit/parent/x": "x"} {
			if got, err := os.ReadFile(d.host(dest + p)); err != nil || string(got) != want {
				t.Errorf("gzip=%v %s = %q, %v; want %q", gz, p, got, err, want)
			}
		}
		if fi, _ := os.Lstat(d.host(dest + "/dir/link")); fi == nil || fi.Mode()&fs.ModeSymlink == 0 {
			t.Errorf("gzip=%v dir/link is not a symlink", gz)
		}
		if fi, _ := os.Stat(d.host(dest + "/dir/f.txt")); fi == nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("gzip=%v dir/f.txt mode = %v; want 0600", gz, fi.Mode())
		}
		if fi, _ := os.Stat(d.host(dest + "/dir")); fi == nil || fi.Mode().Perm() != 0o750 {
			t.Errorf("gzip=%v dir mode = %v; want 0750", gz, fi.Mode())
		}
	}

	// Round trip: what GET /v1/fs/archive makes, PUT restores.
	archiveTree(d)
	code, b := d.do("GET", "/v1/fs/archive", nil, "path", "/proj")
	if code != 200 {
		t.Fatalf("archive: %d", code)
	}
	code, body := d.do("PUT", "/v1/fs/archive", bytes.NewReader(b), "path", "/copy")
	// The archive holds etc-link -> /etc, which extraction refuses.
	wantStatus(t, "extract an archive with an absolute symlink", code, body, 403)
	os.Remove(d.host("/proj/etc-link"))
	_, b = d.do("GET", "/v1/fs/archive", nil, "path", "/proj")
	code, body = d.do("PUT", "/v1/fs/archive", bytes.NewReader(b), "path", "/copy")
	wantStatus(t, "round trip", code, body, 200)
	if got, want := treeOf(t, d.host("/copy")), treeOf(t, d.host("/proj")); got != want {
		t.Errorf("round trip:\n%s\nwant\n%s", got, want)
	}

	d.write("/a-file", "x")
	for _, tt := range []struct {
		name string
		body []byte
		kv   []string
		want int
	}{
		{"garbage", []byte("this is not a tar archive at all, not even close......"), []string{"path", "/g"}, 400},
		{"truncated gzip", makeTar(t, true, tarEntry{name: "f", body: strings.Repeat("x", 5000)})[:40], []string{"path", "/g"}, 400},
		{"zip", []byte("PK\x03\x04rest"), []string{"path", "/g"}, 400},
		{"onto a file", makeTar(t, false, tarEntry{name: "f", body: "x"}), []string{"path", "/a-file"}, 409},
		{"no path", makeTar(t, false), nil, 400},
	} {
		code, b := d.do("PUT", "/v1/fs/archive", bytes.NewReader(tt.body), tt.kv...)
		wantStatus(t, "extract "+tt.name, code, b, tt.want)
	}
}

// treeOf describes a host directory tree: names, types, contents, targets.
func treeOf(t testing.TB, dir string) string {
	t.Helper()
	var lines []string
	filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		fi, _ := e.Info()
		line := fmt.Sprintf("%s %v", rel, fi.Mode())
		switch {
		case e.Type()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			line += " -> " + target
		case e.Type().IsRegular():
			b, _ := os.ReadFile(p)
			line += " " + string(b)
		}
		lines = append(lines, line)
		return nil
	})
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// TestFilesArchiveHostile uploads archives whose entries try to leave the
// destination; each is refused and nothing lands outside it.
func TestFilesArchiveHostile(t *testing.T) {
	d, outside := hostileFS(t)
	rel, _ := filepath.Rel(d.host("/dest"), outside)
	for i, tt := range []struct {
		name    string
		entries []tarEntry
		want    int
	}{
		{"dot-dot entry", []tarEntry{{name: "../evil", body: "x"}}, 403},
		{"nested dot-dot entry", []tarEntry{{name: "a/../../evil", body: "x"}}, 403},
		{"absolute entry", []tarEntry{{name: "/evil", body: "x"}}, 403},
		{"absolute symlink", []tarEntry{{name: "l", typ: tar.TypeSymlink, link: "/etc"}}, 403},
		{"symlink up", []tarEntry{{name: "l", typ: tar.TypeSymlink, link: "../x"}}, 403},
		{"deep symlink up", []tarEntry{{name: "d/l", typ: tar.TypeSymlink, link: "../../x"}}, 403},
		{"symlink to outside, then a file through it", []tarEntry{
			{name: "l", typ: tar.TypeSymlink, link: rel},
			{name: "l/pwned", body: "x"},
		}, 403},
		{"symlink chain out", []tarEntry{
			{name: "d/l", typ: tar.TypeSymlink, link: ".."},
			{name: "e", typ: tar.TypeSymlink, link: "d/l/.."},
			{name: "e/pwned", body: "x"},
		}, 403},
		{"symlink made to escape by a later entry", []tarEntry{
			{name: "e", typ: tar.TypeSymlink, link: "d/l/.."},
			{name: "d/l", typ: tar.TypeSymlink, link: ".."},
		}, 403},
		{"hard link up", []tarEntry{{name: "h", typ: tar.TypeLink, link: "../in/f.txt"}}, 403},
		{"absolute hard link", []tarEntry{{name: "h", typ: tar.TypeLink, link: "/etc/passwd"}}, 403},
		{"hard link to nothing", []tarEntry{{name: "h", typ: tar.TypeLink, link: "nope"}}, 400},
	} {
		dest := fmt.Sprintf("/dest%d", i)
		code, b := d.do("PUT", "/v1/fs/archive", bytes.NewReader(makeTar(t, i%2 == 0, tt.entries...)), "path", dest)
		wantStatus(t, "extract "+tt.name, code, b, tt.want)
	}

	// A symlink planted in the destination before the upload.
	d.write("/planted/keep", "")
	d.symlink(outside, "/planted/evil")
	code, b := d.do("PUT", "/v1/fs/archive", bytes.NewReader(makeTar(t, false, tarEntry{name: "evil/pwned", body: "x"})), "path", "/planted")
	wantStatus(t, "extract through a planted symlink", code, b, 403)
	code, b = d.do("PUT", "/v1/fs/archive", bytes.NewReader(makeTar(t, false, tarEntry{name: "pwned", body: "x"})), "path", "/out-abs")
	wantStatus(t, "extract into a symlink out", code, b, 403)

	entries, err := os.ReadDir(outside)
	if err != nil || len(entries) != 1 || entries[0].Name() != "secret" {
		t.Errorf("outside the root changed: %v, %v; want just secret", entries, err)
	}
	if _, err := os.Lstat(d.host("/dest8/e")); err == nil {
		t.Errorf("the symlink a later entry made escape was kept")
	}
	for _, p := range []string{"/evil", "/x", "/pwned"} {
		if _, err := os.Lstat(d.host(p)); err == nil {
			t.Errorf("%s was written outside its destination", p)
		}
	}
}
