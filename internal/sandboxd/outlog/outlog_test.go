package outlog

import (
	"bytes"
	"math/rand/v2"
	"sync"
	"testing"
	"time"
)

func readAll(t *testing.T, l *Log, off int64) (data map[byte][]byte, next int64, truncated bool) {
	t.Helper()
	data = map[byte][]byte{}
	p := make([]byte, 7) // small on purpose: exercises partial reads
	for {
		c := l.Read(off, p)
		if c.Truncated {
			truncated = true
		}
		if c.N == 0 {
			return data, c.Offset, truncated
		}
		data[c.Stream] = append(data[c.Stream], p[:c.N]...)
		off = c.Offset + int64(c.N)
	}
}

func TestLogWindow(t *testing.T) {
	tests := []struct {
		name      string
		size      int
		writes    []string // "1:text" or "2:text"
		from      int64
		wantOut   string
		wantErr   string
		wantTrunc bool
		wantStart int64
		wantEnd   int64
	}{
		{"empty", 8, nil, 0, "", "", false, 0, 0},
		{"fits", 16, []string{"1:hello", "1: world"}, 0, "hello world", "", false, 0, 11},
		{"streams apart", 32, []string{"1:out1", "2:err1", "1:out2"}, 0, "out1out2", "err1", false, 0, 12},
		{"wraps", 8, []string{"1:abcdef", "1:ghij"}, 0, "cdefghij", "", true, 2, 10},
		{"write bigger than window", 4, []string{"1:0123456789"}, 0, "6789", "", true, 6, 10},
		{"from middle", 16, []string{"1:0123456789"}, 4, "456789", "", false, 0, 10},
		{"stream boundary dropped", 6, []string{"2:eeee", "1:oooooo"}, 0, "oooooo", "", true, 4, 10},
		{"stream boundary kept", 8, []string{"2:eeee", "1:oooooo"}, 0, "oooooo", "ee", true, 2, 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := New(tt.size)
			for _, w := range tt.writes {
				l.Write(w[0]-'0', []byte(w[2:]))
			}
			start, end := l.Bounds()
			if start != tt.wantStart || end != tt.wantEnd {
				t.Errorf("Bounds() = %d,%d; want %d,%d", start, end, tt.wantStart, tt.wantEnd)
			}
			data, next, trunc := readAll(t, l, tt.from)
			if got := string(data[Stdout]); got != tt.wantOut {
				t.Errorf("stdout = %q; want %q", got, tt.wantOut)
			}
			if got := string(data[Stderr]); got != tt.wantErr {
				t.Errorf("stderr = %q; want %q", got, tt.wantErr)
			}
			if trunc != tt.wantTrunc {
				t.Errorf("truncated = %v; want %v", trunc, tt.wantTrunc)
			}
			if next != tt.wantEnd {
				t.Errorf("next offset = %d; want %d", next, tt.wantEnd)
			}
		})
	}
}

func TestReadWaitsAndEOF(t *testing.T) {
	l := New(16)
	c := l.Read(0, make([]byte, 4))
	if c.N != 0 || c.Wait == nil || c.EOF {
		t.Fatalf("Read on empty log = %+v; want a wait channel", c)
	}
	go l.Write(Stdout, []byte("x"))
	select {
	case <-c.Wait:
	case <-time.After(20 * time.Second):
		t.Fatal("wait channel not closed by Write")
	}
	c = l.Read(1, make([]byte, 4))
	go l.Close()
	<-c.Wait
	if c = l.Read(1, make([]byte, 4)); !c.EOF {
		t.Fatalf("Read at end after Close = %+v; want EOF", c)
	}
	l.Write(Stdout, []byte("late"))
	if _, end := l.Bounds(); end != 1 {
		t.Fatalf("end after write-after-close = %d; want 1", end)
	}
}

// TestConcurrentReadersSeeExactBytes checks that readers keeping up with a
// writer see every byte exactly once and in order, while the writer never
// waits for them.
func TestConcurrentReadersSeeExactBytes(t *testing.T) {
	l := New(1 << 12)
	var want bytes.Buffer
	r := rand.New(rand.NewPCG(1, 2))
	chunks := make([][]byte, 2000)
	for i := range chunks {
		b := make([]byte, 1+r.IntN(64))
		for j := range b {
			b[j] = byte(r.UintN(256))
		}
		chunks[i] = b
		want.Write(b)
	}
	var wg sync.WaitGroup
	got := make([]bytes.Buffer, 4)
	lost := make([]bool, 4)
	for i := range got {
		wg.Go(func() {
			var off int64
			p := make([]byte, 512)
			for {
				c := l.Read(off, p)
				if c.Truncated {
					lost[i] = true
				}
				if c.EOF {
					return
				}
				if c.N == 0 {
					<-c.Wait
					continue
				}
				got[i].Write(p[:c.N])
				off = c.Offset + int64(c.N)
			}
		})
	}
	for i, c := range chunks {
		l.Write(Stdout, c)
		if i%100 == 0 {
			time.Sleep(time.Millisecond) // give readers a chance to keep up
		}
	}
	l.Close()
	wg.Wait()
	for i := range got {
		if lost[i] {
			continue // a reader that fell behind must say so; it did
		}
		if !bytes.Equal(got[i].Bytes(), want.Bytes()) {
			t.Errorf("reader %d got %d bytes differing from the %d written", i, got[i].Len(), want.Len())
		}
	}
}

func BenchmarkWrite32K(b *testing.B) {
	l := New(1 << 20)
	p := make([]byte, 32<<10)
	b.SetBytes(int64(len(p)))
	for b.Loop() {
		l.Write(Stdout, p)
	}
}
