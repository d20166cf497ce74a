package jobs

import (
	"context"
	"encoding/base64"
	"errors"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/corral-sh/corral/api/cpapi"
	"github.com/corral-sh/corral/api/sandboxapi"
	"github.com/corral-sh/corral/internal/store"
)

// Output batching.
const (
	flushDelay   = 50 * time.Millisecond // the longest a byte waits before it is stored
	batchBytes   = 64 << 10              // a batch is stored at once when it reaches this
	tailBytes    = 4 << 10               // output kept for the job's summary
	summaryLines = 20
)

// outputData is the data of a process.output event: cpapi.OutputData plus
// where the bytes sit in the process's output log (both streams count):
// Offset of the first byte and Bytes, their number before any redaction.
// A job's events cover its output without gaps or overlaps, in order, so
// recovery resumes at the end of the last one.
type outputData struct {
	Stream     string `json:"stream"`
	Data       string `json:"data,omitempty"`
	DataBase64 string `json:"data_base64,omitempty"`
	Offset     int64  `json:"offset"`
	Bytes      int64  `json:"bytes"`
}

// segment is a run of output of one stream.
type segment struct {
	stream byte
	off    int64
	data   []byte
}

// batcher gathers a job's output and stores it as process.output events,
// through the runner's gate. One goroutine (pump) adds; flushes come from
// pump (a full batch, the exit) and from flushLoop (the delay), serialised
// by the gate.
type batcher struct {
	r    *runner
	kick chan struct{} // capacity 1: output is waiting

	mu   sync.Mutex // guards the fields below; taken inside r.gate, never around it
	segs []segment  // pending output, in offset order
	size int
	next int64  // offset after the last byte added or skipped
	tail []byte // the end of the output, for the summary
}

func newBatcher(r *runner) *batcher { return &batcher{r: r, kick: make(chan struct{}, 1)} }

// start sets the offset the output continues from.
func (b *batcher) start(from int64) {
	b.mu.Lock()
	b.next = from
	b.mu.Unlock()
}

// resume restores what a recovered job had output.
func (b *batcher) resume(rs resumeState) {
	b.mu.Lock()
	b.next, b.tail = rs.next, rs.tail
	b.mu.Unlock()
}

// add queues output at offset off and reports whether a batch is full.
func (b *batcher) add(stream byte, off int64, data []byte) (full bool) {
	b.mu.Lock()
	if off < b.next { // already have the start of it
		skip := min(b.next-off, int64(len(data)))
		data, off = data[skip:], off+skip
	}
	if len(data) > 0 {
		if n := len(b.segs); n > 0 && b.segs[n-1].stream == stream &&
			b.segs[n-1].off+int64(len(b.segs[n-1].data)) == off {
			b.segs[n-1].data = append(b.segs[n-1].data, data...)
		} else {
			b.segs = append(b.segs, segment{stream: stream, off: off, data: append([]byte(nil), data...)})
		}
		b.size += len(data)
		b.next = off + int64(len(data))
		b.tail = append(b.tail, data...)
		if len(b.tail) > 2*tailBytes {
			b.tail = append([]byte(nil), b.tail[len(b.tail)-tailBytes:]...)
		}
	}
	full = b.size >= batchBytes
	b.mu.Unlock()
	select {
	case b.kick <- struct{}{}:
	default:
	}
	return full
}

// skipTo moves past output that is lost, returning how many bytes.
func (b *batcher) skipTo(off int64) int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	lost := max(off-b.next, 0)
	b.next = max(b.next, off)
	return lost
}

// flushLoop stores pending output flushDelay after it arrived, until ctx ends.
func (b *batcher) flushLoop(ctx context.Context) {
	t := time.NewTimer(flushDelay)
	t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-b.kick:
		}
		t.Reset(flushDelay)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		if err := b.flush(ctx, false); err != nil && ctx.Err() == nil {
			b.r.m.log.Warn("jobs: storing output failed; retrying", "job", b.r.id, "err", err)
			select {
			case b.kick <- struct{}{}:
			default:
			}
		}
	}
}

// flushRetry flushes until it succeeds or ctx ends; while it retries, pump
// reads no more output (sandboxd keeps it).
func (b *batcher) flushRetry(ctx context.Context, final bool) error {
	wait := 100 * time.Millisecond
	for {
		err := b.flush(ctx, final)
		if err == nil || errors.Is(err, errClosed) {
			return nil
		}
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		b.r.m.log.Warn("jobs: storing output failed; retrying", "job", b.r.id, "err", err)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return context.Cause(ctx)
		case <-t.C:
		}
		wait = min(2*wait, 5*time.Second)
	}
}

// flush stores the pending output. Unless final, an incomplete UTF-8
// sequence at the end waits for the rest, so text stays text.
func (b *batcher) flush(ctx context.Context, final bool) error {
	b.r.gate.Lock()
	defer b.r.gate.Unlock()
	return b.flushLocked(ctx, final)
}

// flushLocked is flush with r.gate held.
func (b *batcher) flushLocked(ctx context.Context, final bool) error {
	b.mu.Lock()
	segs := b.take(final)
	b.mu.Unlock()
	if len(segs) == 0 {
		return nil
	}
	if b.r.closed {
		return errClosed // the job is final: its output ends with it
	}
	if _, err := b.r.m.broker.Append(ctx, b.r.id, b.r.tenant, encodeOutput(segs)); err != nil {
		b.mu.Lock()
		b.segs = append(segs, b.segs...)
		for _, s := range segs {
			b.size += len(s.data)
		}
		b.mu.Unlock()
		return err
	}
	b.r.touch()
	return nil
}

// take removes and returns the pending segments, keeping back an
// incomplete UTF-8 sequence at the end unless final. b.mu is held.
func (b *batcher) take(final bool) []segment {
	segs := b.segs
	var keep []segment
	if n := len(segs); !final && n > 0 {
		last := segs[n-1]
		if k := incompleteRune(last.data); k > 0 {
			cut := len(last.data) - k
			keep = []segment{{stream: last.stream, off: last.off + int64(cut), data: append([]byte(nil), last.data[cut:]...)}}
			if cut == 0 {
				segs = segs[:n-1]
			} else {
				segs[n-1].data = last.data[:cut]
			}
		}
	}
	b.segs, b.size = keep, 0
	for _, s := range keep {
		b.size += len(s.data)
	}
	return segs
}

// incompleteRune returns the length of an incomplete UTF-8 sequence that
// ends p (0 if p ends on a rune boundary or with invalid bytes).
func incompleteRune(p []byte) int {
	for i := 1; i <= 3 && i <= len(p); i++ {
		c := p[len(p)-i]
		switch {
		case c < 0x80, c >= 0xF8: // ASCII, or never part of UTF-8
			return 0
		case c >= 0xC0: // a start byte: how long is its sequence?
			need := 2
			if c >= 0xF0 {
				need = 4
			} else if c >= 0xE0 {
				need = 3
			}
			if need > i {
				return i
			}
			return 0
		}
	}
	return 0
}

// encodeOutput turns segments into process.output events of at most
// batchBytes each, cut on rune boundaries where possible.
func encodeOutput(segs []segment) []store.EventInput {
	var evs []store.EventInput
	for _, s := range segs {
		name := "stdout"
		if s.stream == sandboxapi.StreamStderr {
			name = "stderr"
		}
		data, off := s.data, s.off
		for len(data) > 0 {
			n := min(len(data), batchBytes)
			if n < len(data) {
				for k := 0; k < 3 && n > 1 && !utf8.RuneStart(data[n]); k++ {
					n--
				}
			}
			d := outputData{Stream: name, Offset: off, Bytes: int64(n)}
			if chunk := data[:n]; utf8.Valid(chunk) {
				d.Data = string(chunk)
			} else {
				d.DataBase64 = base64.StdEncoding.EncodeToString(chunk)
			}
			evs = append(evs, event(cpapi.EventProcessOutput, d))
			data, off = data[n:], off+int64(n)
		}
	}
	return evs
}

// decodeOutput returns the bytes of a process.output event.
func decodeOutput(d outputData) []byte {
	if d.DataBase64 != "" {
		b, err := base64.StdEncoding.DecodeString(d.DataBase64)
		if err == nil {
			return b
		}
	}
	return []byte(d.Data)
}

// summary is the last lines of the output, redacted as the log is.
func (b *batcher) summary() string {
	b.mu.Lock()
	tail := strings.ToValidUTF8(string(b.tail), "\uFFFD")
	b.mu.Unlock()
	tail = b.r.m.broker.Redactor().String(tail)
	tail = strings.TrimRight(tail, " \t\r\n")
	lines := strings.Split(tail, "\n")
	if len(lines) > summaryLines {
		lines = lines[len(lines)-summaryLines:]
	}
	s := strings.Join(lines, "\n")
	if len(s) > 2000 {
		s = strings.ToValidUTF8(s[len(s)-2000:], "")
	}
	return s
}
