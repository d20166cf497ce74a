package sandboxd_test

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/corral-sh/corral/api/sandboxapi"
)

type sseEvent struct {
	kind string
	data sandboxapi.WatchEvent
}

// watchFS opens a watch stream and returns its events; the stream is
// closed when the test ends.
func watchFS(t *testing.T, d *fsd, kv ...string) <-chan sseEvent {
	t.Helper()
	resp := d.send("GET", "/v1/fs/watch", nil, nil, kv...)
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		t.Fatalf("watch: %d %s", resp.StatusCode, b)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Errorf("watch Content-Type %q; want text/event-stream", ct)
	}
	t.Cleanup(func() { resp.Body.Close() })
	ch := make(chan sseEvent, 256)
	go func() {
		defer close(ch)
		sc := bufio.NewScanner(resp.Body)
		var ev sseEvent
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "event: "):
				ev.kind = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &ev.data)
			case line == "" && ev.kind != "":
				ch <- ev
				ev = sseEvent{}
			}
		}
	}()
	return ch
}

// waitEvent reads events until one of kind for path arrives.
func waitEvent(t *testing.T, ch <-chan sseEvent, kind, path string) sseEvent {
	t.Helper()
	var seen []string
	timeout := time.After(20 * time.Second)
	for {
		select {
		case ev, ok := <-ch:
			if !ok {
				t.Fatalf("watch stream ended waiting for %s %s; saw %v", kind, path, seen)
			}
			if ev.kind == kind && ev.data.Path == path {
				return ev
			}
			seen = append(seen, ev.kind+" "+ev.data.Path)
		case <-timeout:
			t.Fatalf("no %s %s within 20s; saw %v", kind, path, seen)
		}
	}
}

func TestFilesWatch(t *testing.T) {
	d := startFS(t)
	d.write("/w/old/keep", "")
	ch := watchFS(t, d, "path", "/w", "recursive", "true")

	if err := os.MkdirAll(d.host("/w/new/nested"), 0o755); err != nil {
		t.Fatal(err)
	}
	if ev := waitEvent(t, ch, "fs.create", "/w/new"); ev.data.Type != "dir" {
		t.Errorf("create /w/new type %q; want dir", ev.data.Type)
	}
	waitEvent(t, ch, "fs.create", "/w/new/nested")
	d.write("/w/new/nested/f.txt", "x")
	if ev := waitEvent(t, ch, "fs.create", "/w/new/nested/f.txt"); ev.data.Type != "file" {
		t.Errorf("create f.txt type %q; want file", ev.data.Type)
	}
	waitEvent(t, ch, "fs.write", "/w/new/nested/f.txt")
	if err := os.Rename(d.host("/w/new/nested/f.txt"), d.host("/w/new/nested/g.txt")); err != nil {
		t.Fatal(err)
	}
	waitEvent(t, ch, "fs.rename", "/w/new/nested/f.txt")
	waitEvent(t, ch, "fs.create", "/w/new/nested/g.txt")
	os.Chmod(d.host("/w/new/nested/g.txt"), 0o600)
	waitEvent(t, ch, "fs.chmod", "/w/new/nested/g.txt")
	os.Remove(d.host("/w/new/nested/g.txt"))
	waitEvent(t, ch, "fs.remove", "/w/new/nested/g.txt")
	d.write("/w/old/deeper.txt", "")
	waitEvent(t, ch, "fs.create", "/w/old/deeper.txt")

	// Changes made through the API show up too, under sandbox paths, and
	// without the atomic write's temporary file.
	d.put("/w/api.txt", "api")
	waitEvent(t, ch, "fs.create", "/w/api.txt")
	d.put("/w/api.txt", "again")
	waitEvent(t, ch, "fs.create", "/w/api.txt")
	d.write("/w/last", "")
	for _, ev := range eventsUntil(t, ch, "/w/last") {
		if strings.Contains(ev.data.Path, "corral-tmp") {
			t.Errorf("watch reported a temporary file: %s %s", ev.kind, ev.data.Path)
		}
	}
}

// eventsUntil returns the events up to and including the first for path.
func eventsUntil(t *testing.T, ch <-chan sseEvent, path string) []sseEvent {
	t.Helper()
	var seen []sseEvent
	timeout := time.After(20 * time.Second)
	for {
		select {
		case ev, ok := <-ch:
			if !ok {
				t.Fatalf("watch stream ended waiting for %s", path)
			}
			seen = append(seen, ev)
			if ev.data.Path == path {
				return seen
			}
		case <-timeout:
			t.Fatalf("no event for %s within 20s; saw %v", path, seen)
		}
	}
}

func TestFilesWatchNonRecursive(t *testing.T) {
	d := startFS(t)
	d.write("/w/sub/x", "")
	ch := watchFS(t, d, "path", "/w")
	d.write("/w/sub/deep", "") // not watched
	d.write("/w/top", "")
	waitEvent(t, ch, "fs.create", "/w/top")
	select {
	case ev := <-ch:
		if strings.HasPrefix(ev.data.Path, "/w/sub/") {
			t.Errorf("non-recursive watch reported %s %s", ev.kind, ev.data.Path)
		}
	case <-time.After(100 * time.Millisecond):
	}

	for _, tt := range []struct {
		name string
		kv   []string
		want int
	}{
		{"missing", []string{"path", "/nope"}, 404},
		{"bad recursive", []string{"path", "/w", "recursive", "yes please"}, 400},
		{"no path", nil, 400},
	} {
		code, b := d.do("GET", "/v1/fs/watch", nil, tt.kv...)
		wantStatus(t, "watch "+tt.name, code, b, tt.want)
	}
}

// TestFilesWatchEndsOnShutdown checks that a watch stream ends when the
// daemon stops instead of holding up its shutdown.
func TestFilesWatchEndsOnShutdown(t *testing.T) {
	d := startFS(t)
	ch := watchFS(t, d, "path", "/", "recursive", "true")
	start := time.Now()
	d.Server.Close()
	for range ch {
	}
	if el := time.Since(start); el > 2*time.Second {
		t.Errorf("watch stream took %v to end after Close; want it prompt", el)
	}
}
