package cpapi

import "encoding/json"

// Event types written by agents beyond DESIGN.md §3's list: the built-in
// agent's model calls and context condensation.
const (
	EventLLMRequest  = "llm.request"
	EventLLMResponse = "llm.response"
	EventCondensed   = "context.condensed"
)

// ThoughtData is the data of an agent.thought event: text the model
// wrote alongside its tool calls.
type ThoughtData struct {
	Text string `json:"text"`
}

// ToolCallData is the data of a tool.call event. Input is the tool's
// JSON input as the model wrote it (a JSON string when the model's
// arguments were not valid JSON).
type ToolCallData struct {
	CallID string          `json:"call_id"`
	Tool   string          `json:"tool"`
	Input  json.RawMessage `json:"input"`
}

// ToolResultData is the data of a tool.result event. Output is the whole
// observation (up to a limit; the model is shown its head and tail when it
// is long, and Truncated says so).
type ToolResultData struct {
	CallID    string `json:"call_id"`
	Tool      string `json:"tool,omitempty"`
	Output    string `json:"output"`
	ExitCode  *int   `json:"exit_code,omitempty"`
	IsError   bool   `json:"is_error,omitempty"`
	Truncated bool   `json:"truncated,omitempty"`
	// Images (screenshots) are not kept in the log; ImageCount says how
	// many the model was shown.
	ImageCount int `json:"image_count,omitempty"`
}

// LLMRequestData is the data of an llm.request event: a model call began.
// Injected lists the seqs of the injected message events it is the first
// to include.
type LLMRequestData struct {
	Step      int     `json:"step"`
	Model     string  `json:"model"`
	Messages  int     `json:"messages"`
	EstTokens int     `json:"est_tokens"`
	Injected  []int64 `json:"injected,omitempty"`
	Purpose   string  `json:"purpose,omitempty"` // "" for a step, "condense" for a summary
}

// Usage is token usage of one model call.
type Usage struct {
	InputTokens      int64 `json:"input_tokens"`
	OutputTokens     int64 `json:"output_tokens"`
	CacheReadTokens  int64 `json:"cache_read_tokens,omitempty"`
	CacheWriteTokens int64 `json:"cache_write_tokens,omitempty"`
}

// LLMResponseData is the data of an llm.response event: the model's whole
// answer (text and tool calls, as provider-neutral parts), its usage and
// why it stopped. It is what a resumed agent rebuilds its conversation
// from.
type LLMResponseData struct {
	Step       int             `json:"step"`
	Model      string          `json:"model"`
	Content    json.RawMessage `json:"content"`
	StopReason string          `json:"stop_reason"`
	Usage      Usage           `json:"usage"`
	DurationMS int64           `json:"duration_ms"`
	Purpose    string          `json:"purpose,omitempty"`
}

// CondensedData is the data of a context.condensed event: the
// conversation's middle was replaced by Summary. The first Head messages
// were kept, then the summary, then the messages from index From on (as
// the conversation stood when the event was written).
type CondensedData struct {
	Summary      string `json:"summary"`
	Head         int    `json:"head"`
	From         int    `json:"from"`
	Dropped      int    `json:"dropped"`
	TokensBefore int    `json:"tokens_before"`
	TokensAfter  int    `json:"tokens_after"`
}

// RawData is the data of a raw event: an external CLI agent's native
// event, as it printed it.
type RawData struct {
	Agent  string          `json:"agent"`
	Event  json.RawMessage `json:"event"`
	Offset int64           `json:"offset,omitempty"` // where the line ended in the CLI's output
}
