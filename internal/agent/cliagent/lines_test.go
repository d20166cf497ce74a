package cliagent

import (
	"strings"
	"testing"
)

func TestLineReader(t *testing.T) {
	r := &lineReader{next: 100}
	// A line split over chunks, with stderr bytes between them (offsets
	// count both streams), a CRLF line, and a last line without newline.
	got := r.feed([]byte(`{"a":`), 100)
	got = append(got, r.feed([]byte("1}\r\n{\"b\":2}\n{\"c\""), 120)...)
	if len(got) != 2 || string(got[0].data) != `{"a":1}` || got[0].end != 124 || string(got[1].data) != `{"b":2}` || got[1].end != 132 {
		t.Fatalf("lines %+v", got)
	}
	last := r.flush()
	if len(last) != 1 || string(last[0].data) != `{"c"` || last[0].end != 136 {
		t.Fatalf("flush %+v", last)
	}
	if r.flush() != nil {
		t.Fatal("flush twice returned a line")
	}
	// An overlong line is cut, not held whole.
	long := strings.Repeat("x", maxLine+10)
	got = r.feed([]byte(long), 200)
	got = append(got, r.feed([]byte("yyy\nok\n"), int64(200+len(long)))...)
	if len(got) != 2 || !got[0].cut || len(got[0].data) != maxLine || string(got[1].data) != "ok" || got[1].cut {
		t.Fatalf("overlong: %d lines, first cut=%v len=%d", len(got), got[0].cut, len(got[0].data))
	}
	// After lost output, the partial line is dropped.
	r.feed([]byte("partial"), 0)
	r.reset(5000)
	if got := r.feed([]byte("tail\n"), 5000); len(got) != 1 || string(got[0].data) != "tail" || got[0].end != 5005 {
		t.Fatalf("after reset: %+v", got)
	}
}
