package files

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/corral-sh/corral/api/sandboxapi"
	"github.com/corral-sh/corral/internal/errdefs"
)

func TestParseMode(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want fs.FileMode
		ok   bool
	}{
		{"0644", 0o644, true}, {"755", 0o755, true}, {"0", 0, true}, {"0777", 0o777, true},
		{"01000", 0, false}, {"0888", 0, false}, {"", 0, false}, {"-1", 0, false}, {"rwx", 0, false},
	} {
		got, err := ParseMode(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("ParseMode(%q) = %o, %v; want %o, ok %v", tt.in, got, err, tt.want, tt.ok)
		}
	}
}

func TestFormatMode(t *testing.T) {
	for _, tt := range []struct {
		in   fs.FileMode
		want string
	}{
		{0o644, "0644"}, {0o755 | fs.ModeDir, "0755"}, {0o777 | fs.ModeSticky, "1777"},
		{0o755 | fs.ModeSetuid, "4755"}, {0o2750&0o777 | fs.ModeSetgid, "2750"}, {0, "0000"},
	} {
		if got := FormatMode(tt.in); got != tt.want {
			t.Errorf("FormatMode(%v) = %q; want %q", tt.in, got, tt.want)
		}
	}
}

func TestComparePaths(t *testing.T) {
	got := []string{"/a-c", "/a/b", "/a", "/b", "/a/b/c", "/a.d", "/a/a"}
	slices.SortFunc(got, comparePaths)
	want := []string{"/a", "/a/a", "/a/b", "/a/b/c", "/a-c", "/a.d", "/b"}
	if !slices.Equal(got, want) {
		t.Errorf("tree order = %v; want %v", got, want)
	}
}

func TestMatchGlob(t *testing.T) {
	for _, tt := range []struct {
		glob, rel string
		want      bool
	}{
		{"*.go", "main.go", true},
		{"*.go", "pkg/util.go", true}, // base name
		{"*.go", "main.gox", false},
		{"pkg/*.go", "pkg/util.go", true},
		{"pkg/*.go", "pkg/sub/util.go", false},
		{"**/*.go", "util.go", true},
		{"**/*.go", "a/b/c/util.go", true},
		{"a/**/c/*.txt", "a/c/x.txt", true},
		{"a/**/c/*.txt", "a/b/b/c/x.txt", true},
		{"a/**/c/*.txt", "a/b/d/x.txt", false},
		{"a/**", "a/b/c", true},
		{"[ab].md", "b.md", true},
	} {
		if got := matchGlob(tt.glob, tt.rel); got != tt.want {
			t.Errorf("matchGlob(%q, %q) = %v; want %v", tt.glob, tt.rel, got, tt.want)
		}
	}
	for _, g := range []string{"[a", "a/[", "**/**/**/**/**/x"} {
		if err := checkGlob(g); !errors.Is(err, errdefs.ErrInvalid) {
			t.Errorf("checkGlob(%q) = %v; want ErrInvalid", g, err)
		}
	}
}

func TestMatchText(t *testing.T) {
	long := strings.Repeat("é", 400) + "NEEDLE" + strings.Repeat("x", 1000)
	off := strings.Index(long, "NEEDLE")
	got := matchText([]byte(long), off)
	if len(got) > maxMatchText || !strings.Contains(got, "NEEDLE") || !strings.HasPrefix(got, "é") {
		t.Errorf("matchText window = %d bytes %q...; want <= %d bytes holding the match, cut at a rune", len(got), got[:20], maxMatchText)
	}
}

func TestListTruncatedKeepsShallow(t *testing.T) {
	r := fixture(t)
	old := listCap
	listCap = 4
	t.Cleanup(func() { listCap = old })
	entries, truncated, err := r.List(context.Background(), "/", 3)
	if err != nil || !truncated || len(entries) != 4 {
		t.Fatalf("List = %d entries, truncated %v, %v; want 4, true", len(entries), truncated, err)
	}
	for _, e := range entries {
		if strings.Count(e.Path, "/") != 1 {
			t.Errorf("truncated listing kept %s, deeper than the top level", e.Path)
		}
	}
}

func TestMoveAcross(t *testing.T) {
	r := fixture(t)
	dir := r.Dir()
	os.MkdirAll(filepath.Join(dir, "tree/sub"), 0o750)
	os.WriteFile(filepath.Join(dir, "tree/sub/f"), []byte("F"), 0o600)
	os.Symlink("sub/f", filepath.Join(dir, "tree/link"))
	// moveAcross is what Move falls back to on EXDEV; a test cannot mount a
	// second filesystem, so it is called directly.
	if err := r.moveAcross("tree", "moved"); err != nil {
		t.Fatalf("moveAcross: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(dir, "tree")); !os.IsNotExist(err) {
		t.Errorf("source still there: %v", err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "moved/link"))
	fi, _ := os.Stat(filepath.Join(dir, "moved/sub/f"))
	if err != nil || string(b) != "F" || fi == nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("moved tree: link reads %q, %v; f mode %v; want F and 0600", b, err, fi)
	}
	if err := r.moveAcross("a/f.txt", "g.txt"); err != nil {
		t.Fatalf("moveAcross file: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "g.txt")); string(b) != "hello\n" {
		t.Errorf("moved file = %q", b)
	}
}

func TestWatchOverflow(t *testing.T) {
	old := watchQueue
	watchQueue = 4
	t.Cleanup(func() { watchQueue = old })
	r := fixture(t)
	w, err := r.Watch("/a", false)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for i := range 20 {
		os.WriteFile(filepath.Join(r.Dir(), "a", fmt.Sprint(i)), nil, 0o644)
	}
	time.Sleep(200 * time.Millisecond) // let the watch meet its full queue
	var kinds []string
	timeout := time.After(20 * time.Second)
	for !slices.Contains(kinds, sandboxapi.FSEventOverflow) {
		select {
		case ev := <-w.Events():
			kinds = append(kinds, ev.Kind)
		case <-timeout:
			t.Fatalf("no overflow within 20s; saw %v", kinds)
		}
	}
	if n := len(kinds); n > watchQueue+1 {
		t.Errorf("got %d events before the overflow; want at most the queue (%d) and the marker", n, watchQueue)
	}
	// After the overflow, events flow again.
	os.WriteFile(filepath.Join(r.Dir(), "a", "last"), nil, 0o644)
	for {
		select {
		case ev := <-w.Events():
			if ev.Path == "/a/last" {
				return
			}
		case <-timeout:
			t.Fatalf("no event for /a/last after the overflow")
		}
	}
}

func TestWatchClose(t *testing.T) {
	r := fixture(t)
	w, err := r.Watch("/", true)
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	w.Close()
	if _, ok := <-w.Events(); ok {
		t.Errorf("Events still open after Close")
	}
}
