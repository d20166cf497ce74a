package llm

import (
	"bytes"
	"encoding/json"
)

// Tool-call input as the providers hand it over.
//
// A tool call's Part.Input is normally a JSON object. Models sometimes
// produce arguments that are not JSON at all (cut off, unescaped quotes);
// that must not fail the completion, since the agent can answer the call
// with an error observation and let the model try again. So the providers
// keep such arguments verbatim as a JSON string: Input is then the raw
// text, quoted (`"{\"path\": \"a"`). Empty arguments become {}.
// MalformedInput tells the two apart, and the providers send a quoted
// Input back to the model as the raw text it wrote.

// ToolInput turns the raw arguments text of a tool call into Part.Input:
// the object itself when it is a JSON object, "{}" when it is empty, the
// text as a JSON string otherwise.
func ToolInput(raw string) json.RawMessage {
	t := bytes.TrimSpace([]byte(raw))
	if len(t) == 0 {
		return json.RawMessage("{}")
	}
	if t[0] == '{' && json.Valid(t) {
		return json.RawMessage(t)
	}
	q, _ := json.Marshal(raw)
	return q
}

// MalformedInput reports whether a tool call's Input is the model's raw
// text rather than a JSON object (see ToolInput), and returns that text.
func MalformedInput(p Part) (raw string, malformed bool) {
	t := bytes.TrimSpace(p.Input)
	if len(t) == 0 || t[0] == '{' {
		return "", false
	}
	if t[0] == '"' && json.Unmarshal(t, &raw) == nil {
		return raw, true
	}
	return string(p.Input), true
}

// ToolArguments is the inverse of ToolInput, for sending a call back to a
// model: the object's JSON, or the raw text of a malformed call.
func ToolArguments(p Part) string {
	if raw, bad := MalformedInput(p); bad {
		return raw
	}
	if len(bytes.TrimSpace(p.Input)) == 0 {
		return "{}"
	}
	return string(p.Input)
}
