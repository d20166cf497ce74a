// Package registry turns Corral's "provider/name" model strings into
// configured llm.Providers, from the standard environment variables
// (OPENAI_BASE_URL, OPENAI_API_KEY, ANTHROPIC_BASE_URL, ANTHROPIC_API_KEY)
// or an explicit Config.
//
// A provider is configured when it has a key or a base URL: a base URL
// alone is a local server (vLLM, Ollama, llama.cpp) that wants no key.
// Providers are built once, in New, and shared by every job.
package registry

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/corral-sh/corral/internal/errdefs"
	"github.com/corral-sh/corral/internal/llm"
	"github.com/corral-sh/corral/internal/llm/anthropic"
	"github.com/corral-sh/corral/internal/llm/openai"
)

// Config is where the providers are and how to call them.
type Config struct {
	OpenAIBaseURL    string
	OpenAIKey        string
	AnthropicBaseURL string
	AnthropicKey     string
	// GeminiBaseURL and GeminiKey (GOOGLE_GEMINI_BASE_URL, GEMINI_API_KEY)
	// reach Google's Gemini API. The built-in agent has no Gemini provider;
	// the Gemini CLI agent uses them through the model gateway.
	GeminiBaseURL string
	GeminiKey     string
	// Timeout bounds one attempt of a completion (streaming included);
	// 0 means DefaultTimeout, negative none.
	Timeout time.Duration
	// MaxRetries is llm.RetryPolicy's: 0 the default, negative none.
	MaxRetries int
	// DefaultModel ("provider/name") is used for a job that names none.
	DefaultModel string
	// ContextWindow, if positive, overrides llm.ContextWindow's table for
	// every model (CORRAL_CONTEXT_WINDOW), for deployments running models
	// the table does not know, such as a local model served with a small
	// window.
	ContextWindow int
	// Retry, if its backoff fields are set, refines the retry policy
	// (tests use a short backoff). MaxRetries and Timeout above win.
	Retry llm.RetryPolicy
}

// DefaultTimeout bounds one attempt of a completion when Config.Timeout
// is 0: long enough for a slow model writing a long answer, short enough
// that a hung connection does not hold a job for good.
const DefaultTimeout = 10 * time.Minute

// FromEnv reads the four standard variables, GEMINI_API_KEY and
// GOOGLE_GEMINI_BASE_URL, CORRAL_MODEL (the default model) and
// CORRAL_CONTEXT_WINDOW (an override of every model's window, in tokens).
func FromEnv() Config {
	c := Config{
		OpenAIBaseURL:    os.Getenv("OPENAI_BASE_URL"),
		OpenAIKey:        os.Getenv("OPENAI_API_KEY"),
		AnthropicBaseURL: os.Getenv("ANTHROPIC_BASE_URL"),
		AnthropicKey:     os.Getenv("ANTHROPIC_API_KEY"),
		DefaultModel:     os.Getenv("CORRAL_MODEL"),
		GeminiBaseURL:    os.Getenv("GOOGLE_GEMINI_BASE_URL"),
		GeminiKey:        os.Getenv("GEMINI_API_KEY"),
	}
	if n, err := strconv.Atoi(os.Getenv("CORRAL_CONTEXT_WINDOW")); err == nil && n > 0 {
		c.ContextWindow = n
	}
	return c
}

// Registry holds the configured providers.
type Registry struct {
	providers map[string]llm.Provider
	def       string
	window    int
}

// New builds the providers c configures. It makes no request.
func New(c Config) *Registry {
	policy := c.Retry
	policy.MaxRetries = c.MaxRetries
	switch {
	case c.Timeout == 0:
		policy.Timeout = DefaultTimeout
	case c.Timeout > 0:
		policy.Timeout = c.Timeout
	}
	r := &Registry{providers: map[string]llm.Provider{}, def: c.DefaultModel, window: c.ContextWindow}
	if c.OpenAIKey != "" || c.OpenAIBaseURL != "" {
		r.providers[openai.Name] = openai.New(openai.Options{BaseURL: c.OpenAIBaseURL, APIKey: c.OpenAIKey, Retry: policy})
	}
	if c.AnthropicKey != "" || c.AnthropicBaseURL != "" {
		r.providers[anthropic.Name] = anthropic.New(anthropic.Options{BaseURL: c.AnthropicBaseURL, APIKey: c.AnthropicKey, Retry: policy})
	}
	return r
}

// known lists every provider Corral has, configured or not, for messages.
var known = []string{anthropic.Name, openai.Name}

// Resolve returns the provider and the provider's own model name for a
// Corral model string ("anthropic/claude-sonnet-4-5"); "" means the
// default model. A malformed string, an unknown provider or one that is
// not configured is an errdefs.ErrUnprocessable error that says what to
// set.
func (r *Registry) Resolve(model string) (llm.Provider, string, error) {
	if model == "" {
		model = r.def
		if model == "" {
			return nil, "", errdefs.Unprocessablef("no model given and no default model (set CORRAL_MODEL, e.g. anthropic/claude-sonnet-4-5)")
		}
	}
	prov, name, err := llm.SplitModel(model)
	if err != nil {
		return nil, "", errdefs.Unprocessablef("model %q is not provider/name (e.g. openai/gpt-4o, anthropic/claude-sonnet-4-5)", model)
	}
	p, ok := r.providers[prov]
	if !ok {
		if !slices.Contains(known, prov) {
			return nil, "", errdefs.Unprocessablef("model %q: unknown provider %q (known: %s)", model, prov, strings.Join(known, ", "))
		}
		env := strings.ToUpper(prov)
		return nil, "", errdefs.Unprocessablef("model %q: provider %q is not configured (set %s_API_KEY or %s_BASE_URL)", model, prov, env, env)
	}
	return p, name, nil
}

// Available lists the configured providers, sorted.
func (r *Registry) Available() []string {
	var out []string
	for name := range r.providers {
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

// DefaultModel is the model used when a job names none ("" if unset).
func (r *Registry) DefaultModel() string { return r.def }

// ContextWindow is the window of a model (Corral's "provider/name" or the
// provider's own name), in tokens: the configured override, or
// llm.ContextWindow.
func (r *Registry) ContextWindow(model string) int {
	if r.window > 0 {
		return r.window
	}
	return llm.ContextWindow(model)
}

// String describes r without keys, for logs.
func (r *Registry) String() string {
	return fmt.Sprintf("llm providers %v, default model %q", r.Available(), r.def)
}
