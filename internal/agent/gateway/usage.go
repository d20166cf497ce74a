package gateway

import (
	"bytes"
	"encoding/json"
	"io"
	"sync"

	"github.com/corral-sh/corral/internal/llm"
)

// Bounds of the usage scanner: a longer event line, or a longer JSON
// answer, is passed through without being read for usage.
const (
	maxEventLine = 1 << 20
	maxJSONBody  = 4 << 20
)

// usage is one answer's token counts, whatever the API's field names.
// The answer's events each report some of them, cumulatively (Anthropic:
// input at message_start, output at message_delta; Gemini: every chunk),
// so the answer's usage is the field-wise maximum over its events.
type usage struct {
	in, out, cacheRead, cacheWrite int64
}

func (u usage) zero() bool { return u == usage{} }

func (u usage) max(v usage) usage {
	return usage{max(u.in, v.in), max(u.out, v.out), max(u.cacheRead, v.cacheRead), max(u.cacheWrite, v.cacheWrite)}
}

func (u usage) llm() llm.Usage {
	return llm.Usage{InputTokens: u.in, OutputTokens: u.out, CacheReadTokens: u.cacheRead, CacheWriteTokens: u.cacheWrite}
}

// usageFields are the counters of the three APIs.
type usageFields struct {
	InputTokens         int64 `json:"input_tokens"`                // Anthropic, OpenAI Responses
	OutputTokens        int64 `json:"output_tokens"`               // Anthropic, OpenAI Responses
	CacheReadTokens     int64 `json:"cache_read_input_tokens"`     // Anthropic
	CacheCreationTokens int64 `json:"cache_creation_input_tokens"` // Anthropic
	PromptTokens        int64 `json:"prompt_tokens"`               // OpenAI Chat
	CompletionTokens    int64 `json:"completion_tokens"`           // OpenAI Chat
	PromptTokenCount    int64 `json:"promptTokenCount"`            // Gemini
	CandidatesCount     int64 `json:"candidatesTokenCount"`        // Gemini
	ThoughtsCount       int64 `json:"thoughtsTokenCount"`          // Gemini
	CachedContentCount  int64 `json:"cachedContentTokenCount"`     // Gemini
}

func (f *usageFields) usage() usage {
	if f == nil {
		return usage{}
	}
	return usage{
		in:         f.InputTokens + f.PromptTokens + f.PromptTokenCount,
		out:        f.OutputTokens + f.CompletionTokens + f.CandidatesCount + f.ThoughtsCount,
		cacheRead:  f.CacheReadTokens + f.CachedContentCount,
		cacheWrite: f.CacheCreationTokens,
	}
}

// usageEnvelope finds the counters in an event or answer: top-level
// usage (Anthropic answers and message_delta, OpenAI Chat), message.usage
// (Anthropic message_start), response.usage (OpenAI Responses'
// response.completed) or usageMetadata (Gemini).
type usageEnvelope struct {
	Usage         *usageFields `json:"usage"`
	UsageMetadata *usageFields `json:"usageMetadata"`
	Message       *struct {
		Usage *usageFields `json:"usage"`
	} `json:"message"`
	Response *struct {
		Usage *usageFields `json:"usage"`
	} `json:"response"`
}

func parseUsage(b []byte) usage {
	if !bytes.Contains(b, []byte("sage")) { // usage, usageMetadata
		return usage{}
	}
	var e usageEnvelope
	if json.Unmarshal(b, &e) != nil {
		return usage{}
	}
	u := e.Usage.usage().max(e.UsageMetadata.usage())
	if e.Message != nil {
		u = u.max(e.Message.Usage.usage())
	}
	if e.Response != nil {
		u = u.max(e.Response.Usage.usage())
	}
	return u
}

// usageReader passes an answer through unchanged while reading the usage
// it reports: each "data:" line of an event stream, or the whole JSON
// body. report is called once, at EOF or Close, if any usage was found.
type usageReader struct {
	rc     io.ReadCloser
	sse    bool
	report func(usage)

	buf  []byte // the current line (sse) or the body so far (json)
	skip bool   // the current line or body is over its bound
	u    usage
	once sync.Once
}

func newUsageReader(rc io.ReadCloser, sse bool, report func(usage)) *usageReader {
	return &usageReader{rc: rc, sse: sse, report: report}
}

func (r *usageReader) Read(p []byte) (int, error) {
	n, err := r.rc.Read(p)
	if n > 0 {
		r.feed(p[:n])
	}
	if err == io.EOF {
		r.finish()
	}
	return n, err
}

func (r *usageReader) Close() error {
	r.finish()
	return r.rc.Close()
}

func (r *usageReader) feed(b []byte) {
	if !r.sse {
		if !r.skip {
			if len(r.buf)+len(b) > maxJSONBody {
				r.skip, r.buf = true, nil
			} else {
				r.buf = append(r.buf, b...)
			}
		}
		return
	}
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			r.appendLine(b)
			return
		}
		r.appendLine(b[:i])
		r.line()
		b = b[i+1:]
	}
}

func (r *usageReader) appendLine(b []byte) {
	if r.skip {
		return
	}
	if len(r.buf)+len(b) > maxEventLine {
		r.skip, r.buf = true, r.buf[:0]
		return
	}
	r.buf = append(r.buf, b...)
}

// line handles one complete event-stream line.
func (r *usageReader) line() {
	if !r.skip {
		if data, ok := bytes.CutPrefix(bytes.TrimRight(r.buf, "\r"), []byte("data:")); ok {
			r.u = r.u.max(parseUsage(bytes.TrimSpace(data)))
		}
	}
	r.buf, r.skip = r.buf[:0], false
}

func (r *usageReader) finish() {
	r.once.Do(func() {
		if r.sse {
			r.line()
		} else if !r.skip {
			r.u = parseUsage(r.buf)
		}
		r.buf = nil
		if !r.u.zero() {
			r.report(r.u)
		}
	})
}
