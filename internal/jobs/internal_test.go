package jobs

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/corral-sh/corral/api/sandboxapi"
	"github.com/corral-sh/corral/internal/errdefs"
)

func TestIncompleteRune(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int
	}{
		{"", 0}, {"abc", 0}, {"é", 0}, {"a\xc3", 1}, {"a\xe2\x82", 2}, {"a\xe2", 1},
		{"\xf0\x9f\x98", 3}, {"\xf0\x9f\x98\x80", 0}, {"a\xff", 0}, {"\x80\x80\x80\x80", 0},
	} {
		if got := incompleteRune([]byte(tc.in)); got != tc.want {
			t.Errorf("incompleteRune(%q) = %d; want %d", tc.in, got, tc.want)
		}
	}
}

// A rune split across two reads stays text: the timed flush keeps its
// start back; the final flush sends whatever is left.
func TestTakeKeepsSplitRune(t *testing.T) {
	b := &batcher{kick: make(chan struct{}, 1)}
	b.add(sandboxapi.StreamStdout, 0, []byte("h\xc3"))
	segs := b.take(false)
	if len(segs) != 1 || string(segs[0].data) != "h" || b.size != 1 {
		t.Fatalf("take = %+v, kept %d; want \"h\" sent, 1 byte kept", segs, b.size)
	}
	b.add(sandboxapi.StreamStdout, 2, []byte("\xa9!"))
	segs = b.take(false)
	if len(segs) != 1 || string(segs[0].data) != "é!" || segs[0].off != 1 {
		t.Fatalf("take = %+v; want \"é!\" at offset 1", segs)
	}
	b.add(sandboxapi.StreamStderr, 4, []byte("\xe2"))
	if segs = b.take(true); len(segs) != 1 || segs[0].off != 4 || segs[0].stream != sandboxapi.StreamStderr {
		t.Fatalf("final take = %+v; want the lone byte", segs)
	}
}

func TestAddSkipsOverlap(t *testing.T) {
	b := &batcher{kick: make(chan struct{}, 1)}
	b.start(10)
	b.add(sandboxapi.StreamStdout, 8, []byte("abcd")) // 8, 9 were stored already
	segs := b.take(true)
	if len(segs) != 1 || segs[0].off != 10 || string(segs[0].data) != "cd" {
		t.Errorf("take = %+v; want \"cd\" at 10", segs)
	}
}

func TestEncodeOutput(t *testing.T) {
	big := strings.Repeat("é", batchBytes) // 2 bytes each: three events
	evs := encodeOutput([]segment{
		{stream: sandboxapi.StreamStdout, off: 0, data: []byte("ok\n")},
		{stream: sandboxapi.StreamStderr, off: 3, data: []byte{0xff, 0x00}},
		{stream: sandboxapi.StreamStdout, off: 5, data: []byte(big)},
	})
	next := int64(0)
	var all []byte
	for i, ev := range evs {
		var d outputData
		if err := json.Unmarshal(ev.Data, &d); err != nil {
			t.Fatal(err)
		}
		b := decodeOutput(d)
		if d.Offset != next || int64(len(b)) != d.Bytes || d.Bytes > batchBytes {
			t.Errorf("event %d: offset %d bytes %d (data %d); want offset %d, at most %d", i, d.Offset, d.Bytes, len(b), next, batchBytes)
		}
		if i == 1 && (d.Stream != "stderr" || d.DataBase64 == "") {
			t.Errorf("event 1 = %+v; want base64 stderr", d)
		}
		if i >= 2 && d.Data == "" {
			t.Errorf("event %d of valid UTF-8 went base64", i)
		}
		next = d.Offset + d.Bytes
		all = append(all, b...)
	}
	if want := "ok\n\xff\x00" + big; string(all) != want || len(evs) != 4 {
		t.Errorf("%d events holding %d bytes; want 4 holding %d", len(evs), len(all), len(want))
	}
}

func TestLeftOut(t *testing.T) {
	ignored := map[string]bool{"build/": true, "secret.env": true, "a/node_modules/": true}
	for _, tc := range []struct {
		name string
		dir  bool
		want bool
	}{
		{".git", true, true}, {".git/objects/ab", false, true}, {"sub/.git", false, true},
		{"build", true, true}, {"build/x.o", false, true}, {"secret.env", false, true},
		{"a/node_modules/x/y.js", false, true}, {"a/b.js", false, false}, {"builder.go", false, false},
		{"src/build", false, false}, {".gitignore", false, false},
	} {
		if got := leftOut(tc.name, tc.dir, ignored); got != tc.want {
			t.Errorf("leftOut(%q) = %v; want %v", tc.name, got, tc.want)
		}
	}
}

func TestEntryName(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		ok       bool
	}{
		{"a/b", "a/b", true}, {"a/b/", "a/b", true}, {"./a", "a", true}, {"a/../b", "b", true},
		{"/etc/passwd", "", false}, {"../x", "", false}, {"a/../../x", "", false}, {".", "", false}, {"", "", false},
	} {
		got, ok := entryName(tc.in)
		if got != tc.want || ok != tc.ok {
			t.Errorf("entryName(%q) = %q, %v; want %q, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

func TestPermanent(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{errdefs.Invalidf("bad"), true}, {errdefs.NotFoundf("no template"), true},
		{errdefs.Unprocessablef("x"), true}, {errdefs.Unavailablef("down"), false},
		{errdefs.Wrap(errdefs.ErrRateLimited, nil, "full"), false}, {errTest("io"), false},
	} {
		if got := permanent(tc.err); got != tc.want {
			t.Errorf("permanent(%v) = %v; want %v", tc.err, got, tc.want)
		}
	}
}

type errTest string

func (e errTest) Error() string { return string(e) }
