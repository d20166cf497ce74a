package eventlog

import (
	"encoding/json"
	"regexp"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
)

// Mask replaces every secret the Redactor finds.
const Mask = "[REDACTED]"

// MinSecretLen is the shortest value Redactor.Add accepts: masking shorter
// strings would mangle ordinary text and reveal little.
const MinSecretLen = 6

// Redactor removes secrets from event data before it is stored: values
// registered with Add (API keys given to a job, tokens from its env), and
// strings shaped like well-known credentials (OpenAI/Anthropic "sk-..." keys,
// GitHub "ghp_..." tokens, "Bearer ..." credentials, AWS access key ids and
// secret keys, Slack tokens, PEM private keys). It works on the decoded JSON
// strings, so a secret is found however the JSON escapes it. A secret split
// across two events (two chunks of output) is not found. It is safe for
// concurrent use.
type Redactor struct {
	mu      sync.Mutex // guards secrets; writers rebuild rep
	secrets map[string]int
	rep     atomic.Pointer[strings.Replacer] // nil while there are no secrets
}

// NewRedactor returns a Redactor that knows secrets (see Add).
func NewRedactor(secrets ...string) *Redactor {
	r := &Redactor{secrets: map[string]int{}}
	r.Add(secrets...)
	return r
}

// Add registers secret values; values shorter than MinSecretLen are
// ignored. Adding a value twice needs two Removes.
func (r *Redactor) Add(secrets ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range secrets {
		if len(s) >= MinSecretLen {
			r.secrets[s]++
		}
	}
	r.rebuild()
}

// Remove forgets secret values registered with Add, e.g. when the job that
// held them has finished.
func (r *Redactor) Remove(secrets ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range secrets {
		if r.secrets[s] > 1 {
			r.secrets[s]--
		} else {
			delete(r.secrets, s)
		}
	}
	r.rebuild()
}

// rebuild makes the replacer; longer secrets first, so that a secret that
// contains another is masked whole. r.mu is held.
func (r *Redactor) rebuild() {
	if len(r.secrets) == 0 {
		r.rep.Store(nil)
		return
	}
	vals := make([]string, 0, len(r.secrets))
	for s := range r.secrets {
		vals = append(vals, s)
	}
	sort.Slice(vals, func(i, j int) bool {
		return len(vals[i]) > len(vals[j]) || len(vals[i]) == len(vals[j]) && vals[i] < vals[j]
	})
	pairs := make([]string, 0, 2*len(vals))
	for _, s := range vals {
		pairs = append(pairs, s, Mask)
	}
	r.rep.Store(strings.NewReplacer(pairs...))
}

// shape is a credential pattern. hint is a substring every match contains
// (lowercase when fold), so most strings skip the regexp entirely. keep
// keeps the first group (a "Bearer " or "key=" prefix) in front of the mask.
type shape struct {
	re   *regexp.Regexp
	hint string
	fold bool
	keep bool
}

var shapes = []shape{
	{re: regexp.MustCompile(`\bcrl_[a-z2-7]{40}\b`), hint: "crl_"},                  // Corral's own API tokens
	{re: regexp.MustCompile(`sk-[A-Za-z0-9_\-]{20,}`), hint: "sk-"},                 // OpenAI, Anthropic (sk-ant-..., sk-proj-...)
	{re: regexp.MustCompile(`\bgh[pousr]_[A-Za-z0-9]{30,}`), hint: "gh"},            // GitHub tokens
	{re: regexp.MustCompile(`\bgithub_pat_[A-Za-z0-9_]{30,}`), hint: "github_pat_"}, // GitHub fine-grained tokens
	{re: regexp.MustCompile(`\bAKIA[A-Z0-9]{16}\b`), hint: "AKIA"},                  // AWS access key ids
	{re: regexp.MustCompile(`\bASIA[A-Z0-9]{16}\b`), hint: "ASIA"},                  // AWS temporary access key ids
	{re: regexp.MustCompile(`\bxox[abposr]-[A-Za-z0-9-]{10,}`), hint: "xox"},        // Slack
	{re: regexp.MustCompile(`-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----`), hint: "PRIVATE KEY"},
	{re: regexp.MustCompile(`(?i)(\bbearer\s+)[A-Za-z0-9\-._~+/]{8,}=*`), hint: "bearer", fold: true, keep: true},
	{re: regexp.MustCompile(`(?i)(aws_secret_access_key["']?\s*[:=]\s*["']?)[A-Za-z0-9/+]{40}`), hint: "aws_secret_access_key", fold: true, keep: true},
}

// String returns s with every secret masked.
func (r *Redactor) String(s string) string {
	if rep := r.rep.Load(); rep != nil {
		s = rep.Replace(s)
	}
	lower := ""
	for _, sh := range shapes {
		if sh.fold {
			if lower == "" {
				lower = strings.ToLower(s)
			}
			if !strings.Contains(lower, sh.hint) {
				continue
			}
		} else if !strings.Contains(s, sh.hint) {
			continue
		}
		if sh.keep {
			s = sh.re.ReplaceAllString(s, "${1}"+Mask)
		} else {
			s = sh.re.ReplaceAllLiteralString(s, Mask)
		}
		lower = ""
	}
	return s
}

// JSON returns data with secrets masked in every string (keys included).
// Everything else is copied byte for byte; data with nothing to mask comes
// back as is. Invalid JSON is scanned as well as it can be (the store
// rejects it anyway).
func (r *Redactor) JSON(data json.RawMessage) json.RawMessage {
	var out []byte // nil until something changes
	last := 0
	for i := 0; i < len(data); i++ {
		if data[i] != '"' {
			continue
		}
		j, escaped := i+1, false
		for j < len(data) && data[j] != '"' {
			if data[j] == '\\' {
				escaped = true
				j++
			}
			j++
		}
		if j >= len(data) {
			break // unterminated string
		}
		var s string
		if escaped {
			if err := json.Unmarshal(data[i:j+1], &s); err != nil {
				i = j
				continue
			}
		} else {
			s = string(data[i+1 : j])
		}
		if red := r.String(s); red != s {
			enc, _ := json.Marshal(red)
			out = append(out, data[last:i]...)
			out = append(out, enc...)
			last = j + 1
		}
		i = j
	}
	if out == nil {
		return data
	}
	return append(out, data[last:]...)
}
