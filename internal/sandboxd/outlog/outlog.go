// Package outlog is a process's output log: a fixed-size ring of bytes
// addressed by absolute offset, remembering which stream (stdout or stderr)
// each byte came from.
//
// The writer never blocks and never waits for readers: when the ring is
// full the oldest bytes are dropped, and a reader asking for them learns
// exactly where the retained window now starts. Readers keep their own
// offset, so any number of them can read at their own pace without a
// per-reader buffer; a reader that is behind simply skips ahead with a
// truncation notice. Waiting for new bytes uses a channel closed on the next
// write, never a sleep loop.
package outlog

import (
	"sync"
)

// Stream ids, matching the connect protocol's frame prefix.
const (
	Stdout byte = 1
	Stderr byte = 2
)

// segment marks the offset where a run of bytes from one stream starts.
type segment struct {
	off    int64
	stream byte
}

// Log is safe for concurrent use by one writer and many readers.
type Log struct {
	mu     sync.Mutex
	buf    []byte    // ring storage; byte at offset o lives at buf[o%len(buf)]
	start  int64     // oldest retained offset
	end    int64     // offset the next byte will have
	segs   []segment // stream runs covering [start,end); segs[0].off <= start
	closed bool
	// notify is closed and replaced by the next Write or Close, but only if
	// a reader took it (waiting), so a writer with no waiters allocates nothing.
	notify  chan struct{}
	waiting bool
}

// New returns a Log that retains the last size bytes.
func New(size int) *Log {
	if size < 1 {
		size = 1
	}
	return &Log{buf: make([]byte, size), notify: make(chan struct{})}
}

// Size is the retention window in bytes.
func (l *Log) Size() int { return len(l.buf) }

// Write appends p as output of stream. It never blocks on readers.
// Writes after Close are dropped.
func (l *Log) Write(stream byte, p []byte) {
	if len(p) == 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return
	}
	if n := len(l.segs); n == 0 || l.segs[n-1].stream != stream {
		l.segs = append(l.segs, segment{off: l.end, stream: stream})
	}
	size := int64(len(l.buf))
	total := int64(len(p))
	if total > size { // only the tail fits
		p = p[total-size:]
	}
	pos := (l.end + total - int64(len(p))) % size
	n := copy(l.buf[pos:], p)
	copy(l.buf, p[n:])
	l.end += total
	if l.end-l.start > size {
		l.start = l.end - size
		l.trimSegments()
	}
	l.wake()
}

// trimSegments drops segments that end before start. mu is held.
func (l *Log) trimSegments() {
	i := 0
	for i+1 < len(l.segs) && l.segs[i+1].off <= l.start {
		i++
	}
	if i > 0 {
		l.segs = append(l.segs[:0], l.segs[i:]...)
	}
}

// wake releases readers blocked in a wait. mu is held.
func (l *Log) wake() {
	if l.waiting {
		close(l.notify)
		l.notify = make(chan struct{})
		l.waiting = false
	}
}

// Close marks the end of output: readers that reach End see EOF.
func (l *Log) Close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.closed {
		l.closed = true
		l.wake()
	}
}

// Bounds returns the oldest retained offset and the offset the next byte
// will have.
func (l *Log) Bounds() (start, end int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.start, l.end
}

// Chunk describes the result of a Read.
type Chunk struct {
	// Offset is the absolute offset of the first byte read. It is larger
	// than the offset asked for when those bytes were no longer retained.
	Offset int64
	N      int
	Stream byte
	// Truncated is set when the requested offset was older than the window:
	// the bytes in [asked, Offset) are lost.
	Truncated bool
	// EOF is set when nothing was read because the log is closed and the
	// reader is at its end.
	EOF bool
	// Wait, when nothing was read and the log is open, is closed as soon as
	// more output arrives or the log closes.
	Wait <-chan struct{}
}

// Read copies bytes from offset off into p, stopping at a stream boundary
// so every chunk belongs to one stream. An offset past End reads nothing
// and waits, as at End.
func (l *Log) Read(off int64, p []byte) Chunk {
	l.mu.Lock()
	defer l.mu.Unlock()
	var c Chunk
	if off < l.start {
		c.Truncated = true
		off = l.start
	}
	if off > l.end {
		off = l.end
	}
	c.Offset = off
	if off == l.end {
		if l.closed {
			c.EOF = true
		} else {
			l.waiting = true
			c.Wait = l.notify
		}
		return c
	}
	// Find the segment holding off and where it ends.
	limit := l.end
	for i := len(l.segs) - 1; i >= 0; i-- {
		if l.segs[i].off <= off {
			c.Stream = l.segs[i].stream
			if i+1 < len(l.segs) {
				limit = l.segs[i+1].off
			}
			break
		}
	}
	want := limit - off
	if int64(len(p)) < want {
		want = int64(len(p))
	}
	size := int64(len(l.buf))
	pos := off % size
	n := copy(p[:want], l.buf[pos:])
	if int64(n) < want {
		n += copy(p[n:want], l.buf)
	}
	c.N = n
	return c
}
