package registry_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/corral-sh/corral/internal/errdefs"
	"github.com/corral-sh/corral/internal/llm"
	"github.com/corral-sh/corral/internal/llm/llmtest"
	"github.com/corral-sh/corral/internal/llm/registry"
)

func TestFromEnv(t *testing.T) {
	t.Setenv("OPENAI_BASE_URL", "http://127.0.0.1:11434/v1")
	t.Setenv("OPENAI_API_KEY", "")
	t.Setenv("ANTHROPIC_BASE_URL", "")
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-x")
	t.Setenv("CORRAL_MODEL", "anthropic/claude-sonnet-4-5")
	t.Setenv("CORRAL_CONTEXT_WINDOW", "8192")
	c := registry.FromEnv()
	want := registry.Config{OpenAIBaseURL: "http://127.0.0.1:11434/v1", AnthropicKey: "sk-ant-x",
		DefaultModel: "anthropic/claude-sonnet-4-5", ContextWindow: 8192}
	if c != want {
		t.Errorf("FromEnv() = %+v, want %+v", c, want)
	}
	r := registry.New(c)
	if got := r.Available(); !slices.Equal(got, []string{"anthropic", "openai"}) {
		t.Errorf("Available() = %q", got)
	}
	if got := r.ContextWindow("openai/gpt-4.1"); got != 8192 {
		t.Errorf("ContextWindow with an override = %d, want 8192", got)
	}
	if strings.Contains(r.String(), "sk-ant-x") {
		t.Errorf("String() shows the key: %s", r)
	}
}

func TestResolve(t *testing.T) {
	r := registry.New(registry.Config{AnthropicKey: "k", DefaultModel: "anthropic/claude-haiku-4-5"})
	for _, tc := range []struct {
		model, provider, name, errHas string
	}{
		{"anthropic/claude-sonnet-4-5", "anthropic", "claude-sonnet-4-5", ""},
		{"", "anthropic", "claude-haiku-4-5", ""},
		{"openai/gpt-4o", "", "", "OPENAI_API_KEY"},
		{"mistral/large", "", "", "unknown provider"},
		{"gpt-4o", "", "", "provider/name"},
		{"anthropic/", "", "", "provider/name"},
	} {
		p, name, err := r.Resolve(tc.model)
		if tc.errHas != "" {
			if err == nil || !errors.Is(err, errdefs.ErrUnprocessable) || !strings.Contains(err.Error(), tc.errHas) {
				t.Errorf("Resolve(%q) err = %v, want ErrUnprocessable saying %q", tc.model, err, tc.errHas)
			}
			continue
		}
		if err != nil || p.Name() != tc.provider || name != tc.name {
			t.Errorf("Resolve(%q) = %v, %q, %v; want %s, %q", tc.model, p, name, err, tc.provider, tc.name)
		}
	}
	if _, _, err := registry.New(registry.Config{}).Resolve(""); !errors.Is(err, errdefs.ErrUnprocessable) || !strings.Contains(err.Error(), "CORRAL_MODEL") {
		t.Errorf("Resolve(\"\") without a default = %v", err)
	}
	if got := registry.New(registry.Config{}).ContextWindow("anthropic/claude-opus-4-1"); got != 200_000 {
		t.Errorf("ContextWindow(claude) = %d, want 200000", got)
	}
}

// TestProvidersReachTheirServers runs one completion through each
// resolved provider against a scripted server, with the base URLs as a
// user would set them.
func TestProvidersReachTheirServers(t *testing.T) {
	s := llmtest.New(t, llmtest.Turn{Text: "from openai"}, llmtest.Turn{Text: "from anthropic"})
	r := registry.New(registry.Config{OpenAIBaseURL: s.URL + "/v1", OpenAIKey: "sk-o",
		AnthropicBaseURL: s.URL, AnthropicKey: "sk-a", MaxRetries: -1})
	for _, tc := range []struct{ model, api, header, text string }{
		{"openai/gpt-4o", llmtest.APIOpenAIChat, "Authorization", "from openai"},
		{"anthropic/claude-sonnet-4-5", llmtest.APIAnthropic, "X-Api-Key", "from anthropic"},
	} {
		p, name, err := r.Resolve(tc.model)
		if err != nil {
			t.Fatalf("Resolve(%q): %v", tc.model, err)
		}
		resp, err := p.Complete(context.Background(), llm.Request{Model: name, Messages: []llm.Message{llm.UserText("hi")}}, nil)
		if err != nil {
			t.Fatalf("%s: Complete: %v", tc.model, err)
		}
		if resp.Message.TextOf() != tc.text {
			t.Errorf("%s: text = %q, want %q", tc.model, resp.Message.TextOf(), tc.text)
		}
	}
	reqs := s.Completions()
	if len(reqs) != 2 || reqs[0].API != llmtest.APIOpenAIChat || reqs[0].Header.Get("Authorization") != "Bearer sk-o" ||
		reqs[1].API != llmtest.APIAnthropic || reqs[1].Header.Get("X-Api-Key") != "sk-a" || reqs[1].Model != "claude-sonnet-4-5" {
		t.Errorf("server saw %+v", reqs)
	}
}
