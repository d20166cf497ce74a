package builtin

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/corral-sh/corral/api/cpapi"
)

const recallExcerpt = 200 // bytes of context on each side of a match

// recall searches the job's log, newest first, for query: a
// case-insensitive regular expression if it parses, else a substring.
func (r *run) recall(query string, limit int) string {
	re, err := regexp.Compile("(?i)" + query)
	if err != nil {
		re = regexp.MustCompile("(?i)" + regexp.QuoteMeta(query))
	}
	var b strings.Builder
	n := 0
	seen := map[string]bool{}
	for i := len(r.st.log) - 1; i >= 0 && n < limit; i-- {
		ev := r.st.log[i]
		label, text := searchable(ev)
		if text == "" {
			continue
		}
		loc := re.FindStringIndex(text)
		if loc == nil {
			continue
		}
		from, to := max(loc[0]-recallExcerpt, 0), min(loc[1]+recallExcerpt, len(text))
		excerpt := strings.ToValidUTF8(text[from:to], "")
		if from > 0 {
			excerpt = "…" + excerpt
		}
		if to < len(text) {
			excerpt += "…"
		}
		if seen[excerpt] {
			continue // the same text again (a repeated summary or output)
		}
		seen[excerpt] = true
		where := label
		if ev.Seq > 0 {
			where = fmt.Sprintf("event %d, %s", ev.Seq, label)
		}
		fmt.Fprintf(&b, "--- %s\n%s\n", where, excerpt)
		n++
	}
	if n == 0 {
		return fmt.Sprintf("nothing in this job's history matches %q", query)
	}
	return b.String()
}

// searchable is the text of an event recall looks in, with a label.
func searchable(ev cpapi.Event) (string, string) {
	switch ev.Type {
	case cpapi.EventToolResult:
		var d cpapi.ToolResultData
		if json.Unmarshal(ev.Data, &d) != nil || d.Tool == "recall" {
			return "", ""
		}
		return "output of " + d.Tool, d.Output
	case cpapi.EventToolCall:
		var d cpapi.ToolCallData
		if json.Unmarshal(ev.Data, &d) != nil || d.Tool == "recall" {
			return "", ""
		}
		return "call of " + d.Tool, string(d.Input)
	case cpapi.EventMessage:
		var d cpapi.MessageData
		_ = json.Unmarshal(ev.Data, &d)
		return "message from " + d.Role, d.Text
	case cpapi.EventAgentThought:
		var d cpapi.ThoughtData
		_ = json.Unmarshal(ev.Data, &d)
		return "your note", d.Text
	case cpapi.EventCondensed:
		var d cpapi.CondensedData
		_ = json.Unmarshal(ev.Data, &d)
		return "earlier summary", d.Summary
	}
	return "", ""
}
