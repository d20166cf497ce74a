package cliagent

import "bytes"

// line is one line of a CLI's stdout, without its newline.
type line struct {
	data []byte
	end  int64 // the offset after its newline in the process's output
	cut  bool  // it was longer than maxLine; data is its head
}

// lineReader splits stdout chunks into lines. Offsets count the process's
// whole output (stdout and stderr interleaved), so each chunk comes with
// the offset of its first byte.
type lineReader struct {
	buf  []byte
	cut  bool  // the current line overflowed maxLine
	next int64 // the offset after the last byte fed
}

// feed adds a chunk starting at offset off and returns the lines it
// completed.
func (r *lineReader) feed(data []byte, off int64) []line {
	var out []line
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			r.add(data)
			r.next = off + int64(len(data))
			return out
		}
		r.add(data[:i])
		out = append(out, line{data: bytes.TrimRight(r.buf, "\r"), end: off + int64(i) + 1, cut: r.cut})
		r.buf, r.cut = nil, false
		data, off = data[i+1:], off+int64(i)+1
	}
	r.next = off
	return out
}

func (r *lineReader) add(b []byte) {
	if r.cut {
		return
	}
	if len(r.buf)+len(b) > maxLine {
		r.buf = append(r.buf, b[:maxLine-len(r.buf)]...)
		r.cut = true
		return
	}
	r.buf = append(r.buf, b...)
}

// reset drops a partial line: output before from was lost.
func (r *lineReader) reset(from int64) {
	r.buf, r.cut, r.next = nil, false, from
}

// flush returns the last line if it had no newline.
func (r *lineReader) flush() []line {
	if len(r.buf) == 0 && !r.cut {
		return nil
	}
	ln := line{data: r.buf, end: r.next, cut: r.cut}
	r.buf, r.cut = nil, false
	return []line{ln}
}
