package cliagent

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/corral-sh/corral/api/cpapi"
	"github.com/corral-sh/corral/internal/agent"
)

// RawData is the data of the raw events the CLI agents write: the native
// event (cpapi.RawData) and where it came from. A line of the CLI's stdout
// has Stream "" and Offset where the line ended in the process's output;
// Corral's own records of a run have Stream "start" (the command line),
// "stdin" (a user message written to a streaming CLI) or "exit".
type RawData struct {
	cpapi.RawData
	// Process is the sandboxd tag of the CLI process ("agent-<job>-<n>").
	Process string `json:"process"`
	Stream  string `json:"stream,omitempty"`
	// Text is a line that is not JSON, or the head and tail of one too
	// long to keep whole (Truncated).
	Text      string `json:"text,omitempty"`
	Truncated bool   `json:"truncated,omitempty"`
	// Injected lists the injected messages (their message events' seqs)
	// this record delivered to the CLI.
	Injected []int64 `json:"injected,omitempty"`
}

// Streams of RawData.
const (
	streamStdout = ""
	streamStart  = "start"
	streamStdin  = "stdin"
	streamExit   = "exit"
)

// exitRecord is the event of a RawData with Stream "exit".
type exitRecord struct {
	ExitCode *int    `json:"exit_code"`
	Signal   *string `json:"signal"`
}

// state is a job's CLI runs as its log tells them, kept up to date by the
// live runner the same way replay builds it, so a resumed run continues
// exactly where the log stops.
type state struct {
	f    flavor
	task string

	run    int    // the current run's number; 0 before the first
	tag    string // its process's tag
	next   int64  // where its stdout continues: after the last line read
	exited *exitRecord
	tr     translator
	// Streaming CLIs: user messages written to stdin in this run, and
	// taken in (replayed) by the CLI; whether a turn ended after the last
	// write.
	written, took int
	idle          bool

	prior     outcome // the finished runs': tokens and steps summed, the last session
	delivered map[int64]bool
	pending   []agent.Injected // injected, not yet delivered, in log order
}

func newState(f flavor, task string) *state {
	return &state{f: f, task: task, delivered: map[int64]bool{}}
}

// replay builds the state from a job's log.
func replay(f flavor, task string, history []cpapi.Event) *state {
	st := newState(f, task)
	for _, ev := range history {
		switch ev.Type {
		case cpapi.EventMessage:
			var d cpapi.MessageData
			if json.Unmarshal(ev.Data, &d) == nil && (d.Role == "user" || d.Role == "system") {
				st.inject(agent.Injected{Seq: ev.Seq, Role: d.Role, Text: d.Text})
			}
		case cpapi.EventRaw:
			var d RawData
			if json.Unmarshal(ev.Data, &d) == nil && d.Agent == f.name() {
				st.apply(d, nil)
			}
		}
	}
	return st
}

// inject queues an injected message unless it was seen.
func (st *state) inject(m agent.Injected) bool {
	if st.delivered[m.Seq] {
		return false
	}
	for _, p := range st.pending {
		if p.Seq == m.Seq {
			return false
		}
	}
	st.pending = append(st.pending, m)
	return true
}

// markDelivered takes seqs off the pending queue.
func (st *state) markDelivered(seqs []int64) {
	for _, s := range seqs {
		st.delivered[s] = true
	}
	kept := st.pending[:0]
	for _, p := range st.pending {
		if !st.delivered[p.Seq] {
			kept = append(kept, p)
		}
	}
	st.pending = kept
}

// apply folds one raw record into the state and returns the translation
// of a stdout line (which replay discards). line, if not nil, is the
// whole line, when d holds only part of it (Truncated).
func (st *state) apply(d RawData, line []byte) ([]agent.Event, signal) {
	switch d.Stream {
	case streamStart:
		st.finishRun()
		st.run = runNumber(d.Process, st.run+1)
		st.tag, st.next, st.exited = d.Process, 0, nil
		st.tr = st.f.newTranslator(st.run)
		st.written, st.took, st.idle = 0, 0, false
		st.markDelivered(d.Injected)
	case streamStdin:
		if d.Process == st.tag {
			st.written++
			st.idle = false
		}
		st.markDelivered(d.Injected)
	case streamExit:
		if d.Process == st.tag && st.exited == nil {
			var x exitRecord
			_ = json.Unmarshal(d.Event, &x)
			st.exited = &x
		}
	case streamStdout:
		if d.Process != st.tag || st.tr == nil {
			return nil, signal{}
		}
		st.next = max(st.next, d.Offset)
		if line == nil {
			line = d.Event
		}
		if len(line) == 0 {
			return nil, signal{}
		}
		evs, sig := st.tr.translate(line)
		st.took += sig.took
		if sig.turnDone {
			st.idle = true
		}
		return evs, sig
	}
	return nil, signal{}
}

// finishRun adds the current run's outcome to prior. It is called when a
// run's exit has been handled (or a new run starts).
func (st *state) finishRun() {
	if st.tr == nil {
		return
	}
	st.tr.finish()
	o := st.tr.outcome()
	st.prior.tokens += o.tokens
	st.prior.steps += o.steps
	if o.session != "" {
		st.prior.session = o.session
	}
	st.prior.summary, st.prior.failed = o.summary, o.failed
	st.tr = nil
}

// session is the CLI's session to continue in a new run.
func (st *state) session() string {
	if st.tr != nil {
		if s := st.tr.outcome().session; s != "" {
			return s
		}
	}
	return st.prior.session
}

// runTag is the sandboxd tag of run n of a job.
func runTag(jobID string, n int) string { return "agent-" + jobID + "-" + strconv.Itoa(n) }

// runNumber reads n back from a tag; fallback when it has none.
func runNumber(tag string, fallback int) int {
	i := strings.LastIndexByte(tag, '-')
	if n, err := strconv.Atoi(tag[i+1:]); i >= 0 && err == nil && n > 0 {
		return n
	}
	return fallback
}

// injectedText is how an injected message reaches the CLI.
func injectedText(msgs []agent.Injected) string {
	var parts []string
	for _, m := range msgs {
		if m.Role == "system" {
			parts = append(parts, "[Message from the Corral system] "+m.Text)
		} else {
			parts = append(parts, m.Text)
		}
	}
	return strings.Join(parts, "\n\n")
}

func seqsOf(msgs []agent.Injected) []int64 {
	var out []int64
	for _, m := range msgs {
		out = append(out, m.Seq)
	}
	return out
}
