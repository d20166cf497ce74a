package template

import (
	"archive/tar"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeMmdebstrap writes a script standing in for mmdebstrap: it appends
// its SOURCE_DATE_EPOCH to <dir>/runs, then runs body.
func fakeMmdebstrap(t *testing.T, body string) (bin, runs string) {
	t.Helper()
	dir := t.TempDir()
	bin, runs = filepath.Join(dir, "mmdebstrap"), filepath.Join(dir, "runs")
	script := "#!/bin/sh\necho \"$SOURCE_DATE_EPOCH\" >> " + runs + "\n" + body + "\n"
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return bin, runs
}

func runCount(t *testing.T, runs string) int {
	b, err := os.ReadFile(runs)
	if errors.Is(err, os.ErrNotExist) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "\n")
}

func TestBuildCaches(t *testing.T) {
	bin, runs := fakeMmdebstrap(t, `echo "I: working" >&2; printf 'rootfs'`)
	cache := filepath.Join(t.TempDir(), "cache")
	var log strings.Builder
	opts := Options{Name: "minimal", CacheDir: cache, Mirror: "http://m/debian", Mmdebstrap: bin, Log: &log}
	path, err := Build(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); string(b) != "rootfs" {
		t.Errorf("tarball = %q; want mmdebstrap's stdout", b)
	}
	if b, _ := os.ReadFile(runs); string(b) != "1735689600\n" {
		t.Errorf("SOURCE_DATE_EPOCH = %q; want 1735689600", b)
	}
	if !strings.Contains(log.String(), "I: working") {
		t.Errorf("log %q lacks mmdebstrap's output", log.String())
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o644 {
		t.Errorf("tarball mode = %v; want 0644", fi.Mode().Perm())
	}
	p2, err := Build(t.Context(), opts)
	if err != nil || p2 != path {
		t.Fatalf("second Build = %s, %v; want %s", p2, err, path)
	}
	if n := runCount(t, runs); n != 1 {
		t.Errorf("mmdebstrap ran %d times; want 1 (second build cached)", n)
	}
	checkCache(t, cache, 1)
}

// checkCache fails unless cache holds n tarballs and no partial ones.
func checkCache(t *testing.T, cache string, n int) {
	t.Helper()
	entries, _ := os.ReadDir(cache)
	tars := 0
	for _, e := range entries {
		switch {
		case strings.HasSuffix(e.Name(), ".partial"):
			t.Errorf("cache holds a partial tarball %s", e.Name())
		case strings.HasSuffix(e.Name(), ".tar"):
			tars++
		}
	}
	if tars != n {
		t.Errorf("cache holds %d tarballs; want %d", tars, n)
	}
}

func TestBuildConcurrent(t *testing.T) {
	bin, runs := fakeMmdebstrap(t, `sleep 0.5; printf 'rootfs'`)
	cache := t.TempDir()
	opts := Options{Name: "minimal", CacheDir: cache, Mirror: "http://m/debian", Mmdebstrap: bin}
	var wg sync.WaitGroup
	paths := make([]string, 3)
	for i := range paths {
		wg.Go(func() {
			p, err := Build(t.Context(), opts)
			if err != nil {
				t.Error(err)
			}
			paths[i] = p
		})
	}
	wg.Wait()
	if n := runCount(t, runs); n != 1 {
		t.Errorf("3 concurrent builds ran mmdebstrap %d times; want 1", n)
	}
	if paths[0] != paths[1] || paths[1] != paths[2] {
		t.Errorf("paths = %q; want one", paths)
	}
	checkCache(t, cache, 1)
}

func TestBuildFailure(t *testing.T) {
	bin, _ := fakeMmdebstrap(t, `printf 'half'; echo "E: cannot find package nope" >&2; exit 1`)
	cache := t.TempDir()
	_, err := Build(t.Context(), Options{Name: "minimal", CacheDir: cache, Mirror: "http://m/debian", Mmdebstrap: bin})
	if err == nil || !strings.Contains(err.Error(), "E: cannot find package nope") {
		t.Fatalf("Build error = %v; want mmdebstrap's message", err)
	}
	checkCache(t, cache, 0)
}

func TestBuildNoMmdebstrap(t *testing.T) {
	_, err := Build(t.Context(), Options{Name: "minimal", CacheDir: t.TempDir(), Mmdebstrap: "no-such-mmdebstrap"})
	if err == nil || !strings.Contains(err.Error(), "apt-get install mmdebstrap") {
		t.Fatalf("Build error = %v; want a hint to install mmdebstrap", err)
	}
}

func TestBuildCancel(t *testing.T) {
	bin, _ := fakeMmdebstrap(t, `trap 'kill $!; echo cleaned up >&2; exit 3' TERM; sleep 30 & wait`)
	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(200*time.Millisecond, cancel)
	start := time.Now()
	var log strings.Builder
	_, err := Build(ctx, Options{Name: "minimal", CacheDir: t.TempDir(), Mirror: "http://m/debian", Mmdebstrap: bin, Log: &log})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Build error = %v; want context.Canceled", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("cancelled Build took %s", d)
	}
	if !strings.Contains(log.String(), "cleaned up") {
		t.Errorf("mmdebstrap got no SIGTERM; log %q", log.String())
	}
}

// TestBuildMinimal builds the minimal template for real (about 20 s) and
// checks the layout the runtime contract needs.
func TestBuildMinimal(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped in -short mode: a real mmdebstrap build takes about 20 s")
	}
	if _, err := exec.LookPath("mmdebstrap"); err != nil {
		t.Skip("mmdebstrap is not installed (apt-get install mmdebstrap)")
	}
	cache := t.TempDir()
	start := time.Now()
	path, err := Build(t.Context(), Options{Name: "minimal", CacheDir: cache, Log: testLog{t}})
	if err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Stat(path)
	t.Logf("built %s: %d MiB in %s", path, fi.Size()>>20, time.Since(start).Round(time.Second))

	entries := readTar(t, path)
	dirs := []struct {
		path     string
		uid, gid int
	}{
		{"./home/agent/", 1000, 1000},
		{"./workspace/", 1000, 1000},
		{"./run/corral/", 0, 0},
		{"./.corral/bin/", 0, 0},
		{"./tmp/", 0, 0},
	}
	for _, d := range dirs {
		h, ok := entries[d.path]
		if !ok || h.Typeflag != tar.TypeDir {
			t.Errorf("tarball lacks directory %s", d.path)
			continue
		}
		if h.Uid != d.uid || h.Gid != d.gid {
			t.Errorf("%s owner = %d:%d; want %d:%d", d.path, h.Uid, h.Gid, d.uid, d.gid)
		}
	}
	for _, f := range []string{"./usr/bin/ps", "./etc/ssl/certs/ca-certificates.crt", "./usr/bin/bash", "./home/agent/.bashrc"} {
		if _, ok := entries[f]; !ok {
			t.Errorf("tarball lacks %s", f)
		}
	}
	for name := range entries {
		switch {
		case strings.HasPrefix(name, "./usr/share/man/") && strings.HasSuffix(name, ".gz"),
			strings.HasPrefix(name, "./var/lib/apt/lists/") && strings.HasSuffix(name, "_Packages"),
			strings.HasPrefix(name, "./var/cache/apt/") && strings.HasSuffix(name, ".deb"),
			strings.HasPrefix(name, "./run/") && name != "./run/" && !strings.HasPrefix(name, "./run/lock") && !strings.HasPrefix(name, "./run/corral"):
			t.Errorf("tarball has %s, which the build should have left out", name)
		}
	}
	if got := entries["./etc/passwd"].content; !strings.Contains(got, "agent:x:1000:1000::/home/agent:/bin/bash\n") {
		t.Errorf("/etc/passwd lacks the agent user:\n%s", got)
	}
	if got := entries["./etc/hostname"].content; got != "corral\n" {
		t.Errorf("/etc/hostname = %q; want corral", got)
	}

	// A second build of the same definition is a cache hit: it must not
	// even look for mmdebstrap.
	again, err := Build(t.Context(), Options{Name: "minimal", CacheDir: cache, Mmdebstrap: "/nonexistent/mmdebstrap"})
	if err != nil || again != path {
		t.Errorf("second Build = %s, %v; want cached %s", again, err, path)
	}
}

type tarEntry struct {
	*tar.Header
	content string // for the small files the test reads
}

func readTar(t *testing.T, path string) map[string]tarEntry {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	entries := map[string]tarEntry{}
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return entries
		}
		if err != nil {
			t.Fatal(err)
		}
		e := tarEntry{Header: h}
		if h.Name == "./etc/passwd" || h.Name == "./etc/hostname" {
			b, _ := io.ReadAll(tr)
			e.content = string(b)
		}
		entries[h.Name] = e
	}
}

// testLog sends mmdebstrap's output to the test log.
type testLog struct{ t *testing.T }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
