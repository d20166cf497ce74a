package llm

import (
	"strings"
)

// DefaultContextWindow is the window assumed for a model ContextWindow
// does not know: small enough for most local models.
const DefaultContextWindow = 32_768

// windows maps model-name prefixes to input context windows, in tokens.
// The longest matching prefix wins.
var windows = []struct {
	prefix string
	tokens int
}{
	{"gpt-4.1", 1_047_576},
	{"gpt-5", 272_000}, // gpt-5 family: 400k total, 272k of input
	{"gpt-4o", 128_000},
	{"gpt-4.5", 128_000},
	{"gpt-4-turbo", 128_000},
	{"gpt-4-1106", 128_000},
	{"gpt-4-0125", 128_000},
	{"gpt-4", 8_192},
	{"gpt-3.5-turbo", 16_385},
	{"chatgpt-4o", 128_000},
	{"o1", 200_000},
	{"o1-mini", 128_000},
	{"o1-preview", 128_000},
	{"o3", 200_000},
	{"o4", 200_000},
	{"codex-mini", 200_000},
	{"claude-", 200_000},
	{"gemini-1.5-pro", 2_097_152},
	{"gemini-", 1_048_576},
	{"llama3.1", 131_072},
	{"llama3.2", 131_072},
	{"llama3.3", 131_072},
	{"llama-3.1", 131_072},
	{"llama-3.3", 131_072},
	{"deepseek-", 128_000},
	{"mistral-large", 131_072},
	{"devstral", 131_072},
	{"qwen3-coder", 262_144},
	{"kimi-k2", 131_072},
	{"glm-4.5", 131_072},
}

// ContextWindow returns the input context window of a model, in tokens,
// for a provider's own model name ("gpt-4o", "claude-sonnet-4-5") or
// Corral's "provider/name" (an OpenRouter name such as
// "openai/openai/gpt-4o" works too: only the part after the last slash
// counts). Unknown models get DefaultContextWindow. A deployment whose
// models differ sets an override (registry.Config.ContextWindow, from
// CORRAL_CONTEXT_WINDOW), which callers apply before asking here.
func ContextWindow(model string) int {
	name := strings.ToLower(model)
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		name = name[i+1:]
	}
	best, tokens := -1, DefaultContextWindow
	for _, w := range windows {
		if strings.HasPrefix(name, w.prefix) && len(w.prefix) > best {
			best, tokens = len(w.prefix), w.tokens
		}
	}
	return tokens
}

// ImageTokens is the cost EstimateTokens counts for one image, about what
// the providers charge for a screenshot-sized picture.
const ImageTokens = 1_600

// EstimateTokens is a cheap estimate of the tokens msgs take in a prompt:
// about 4 bytes a token for text, tool inputs and names, ImageTokens an
// image, and a few tokens of framing a message and a part. It is meant
// for accounting between responses (whose Usage is the real count), not
// for billing.
func EstimateTokens(msgs []Message) int {
	n := 0
	for _, m := range msgs {
		n += 4
		for _, p := range m.Content {
			n += partTokens(p)
		}
	}
	return n
}

// EstimateRequestTokens is EstimateTokens plus the system prompt and the
// tool definitions of req.
func EstimateRequestTokens(req Request) int {
	n := EstimateTokens(req.Messages) + textTokens(len(req.System))
	for _, t := range req.Tools {
		n += 8 + textTokens(len(t.Name)+len(t.Description)+len(t.Schema))
	}
	return n
}

func partTokens(p Part) int {
	n := 3
	switch p.Type {
	case PartImage:
		return n + ImageTokens
	case PartToolCall:
		n += textTokens(len(p.Tool) + len(p.Input) + len(p.CallID))
	case PartToolResult:
		n += textTokens(len(p.Text) + len(p.CallID))
		n += len(p.Images) * ImageTokens
	default:
		n += textTokens(len(p.Text))
	}
	return n
}

func textTokens(bytes int) int { return (bytes + 3) / 4 }
