//go:build !slim

package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"text/tabwriter"
	"time"
	"unicode/utf8"
)

// isTerminal reports whether w is a terminal.
func isTerminal(w any) bool {
	_, ok := terminalFD(w)
	return ok
}

// colorOK reports whether to colour what goes to w: a terminal, and
// NO_COLOR (no-color.org) not set.
func colorOK(w io.Writer) bool {
	return isTerminal(w) && os.Getenv("NO_COLOR") == ""
}

// ANSI styles.
const (
	styleRed    = "31"
	styleGreen  = "32"
	styleYellow = "33"
	styleCyan   = "36"
	styleDim    = "2"
	styleBold   = "1"
)

// paint wraps s in an ANSI style when on is set.
func paint(on bool, style, s string) string {
	if !on || style == "" {
		return s
	}
	return "\x1b[" + style + "m" + s + "\x1b[0m"
}

// statusStyle is the colour of a job or sandbox status.
func statusStyle(st string) string {
	switch st {
	case "completed", "running", "ready":
		return styleGreen
	case "failed", "error":
		return styleRed
	case "cancelled", "deleting", "deleted", "expired":
		return styleYellow
	}
	return styleCyan
}

// printJSON writes v as indented JSON.
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("write JSON: %w", err)
	}
	return nil
}

// newTable returns a tabwriter for aligned columns; Flush it.
func newTable(w io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
}

// age is how long ago t was, in one unit as kubectl shows it: 45s, 12m,
// 3h, 5d; "-" for the zero time.
func age(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return shortDuration(time.Since(t))
}

// shortDuration is d in its largest unit.
func shortDuration(d time.Duration) string {
	switch {
	case d < 0:
		return "0s"
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d.Hours()))
	}
	return fmt.Sprintf("%dd", int(d.Hours()/24))
}

// oneLine is s on one line, cut to n runes with an ellipsis.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// byteSize is n in binary units: 512 B, 1.5 KiB, 3.2 MiB.
func byteSize(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// spinner shows that something is under way, on a terminal only: a
// turning bar and a message, rewritten in place every 100 ms. Stop it
// before writing anything else to the same terminal. The zero value of a
// spinner made for a non-terminal does nothing.
type spinner struct {
	w    io.Writer
	on   bool
	mu   sync.Mutex
	stop chan struct{}
	done chan struct{}
}

func newSpinner(w io.Writer) *spinner { return &spinner{w: w, on: isTerminal(w)} }

// Start shows msg, replacing what a running spinner showed.
func (s *spinner) Start(msg string) {
	if !s.on {
		return
	}
	s.Stop()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stop, s.done = make(chan struct{}), make(chan struct{})
	go func(stop, done chan struct{}) {
		defer close(done)
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for i := 0; ; i++ {
			fmt.Fprintf(s.w, "\r\x1b[K%c %s", `|/-\`[i%4], msg)
			select {
			case <-stop:
				fmt.Fprint(s.w, "\r\x1b[K")
				return
			case <-t.C:
			}
		}
	}(s.stop, s.done)
}

// Stop clears the spinner's line; it returns once the line is clear.
func (s *spinner) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stop == nil {
		return
	}
	close(s.stop)
	<-s.done
	s.stop, s.done = nil, nil
}

// progressWriter counts what passes through it and, on a terminal, shows
// the count (and the total, when known) at most every 100 ms.
type progressWriter struct {
	w          io.Writer // where the progress line goes
	label      string
	total, n   int64
	lastShown  time.Time
	shownN     int64 // the count last shown
	terminated bool
}

func (p *progressWriter) Write(b []byte) (int, error) {
	p.n += int64(len(b))
	if now := time.Now(); now.Sub(p.lastShown) >= 100*time.Millisecond {
		p.lastShown = now
		p.show()
	}
	return len(b), nil
}

func (p *progressWriter) show() {
	p.shownN = p.n
	if p.total > 0 {
		fmt.Fprintf(p.w, "\r\x1b[K%s %s / %s (%d%%)", p.label, byteSize(p.n), byteSize(p.total), p.n*100/p.total)
		return
	}
	fmt.Fprintf(p.w, "\r\x1b[K%s %s", p.label, byteSize(p.n))
}

// Done shows the final count and ends the line.
func (p *progressWriter) Done() {
	if p.terminated {
		return
	}
	p.terminated = true
	if p.shownN != p.n || p.lastShown.IsZero() {
		p.show()
	}
	fmt.Fprintln(p.w)
}
