package jobs

import (
	"math"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/corral-sh/corral/api/cpapi"
	"github.com/corral-sh/corral/internal/errdefs"
)

// Request limits.
const (
	MaxTimeout    = 24 * time.Hour
	maxTask       = 256 << 10
	maxCommand    = 64 << 10
	maxEnv        = 128
	maxEnvBytes   = 128 << 10
	maxLabels     = 64
	maxName       = 200 // runtime, template, model
	maxCPUs       = 1024
	maxMemoryMB   = 1 << 24 // 16 TiB
	maxPIDs       = 1 << 22
	maxDiskMB     = 1 << 30
	maxMessage    = 64 << 10
	maxLabelKey   = 63
	maxLabelValue = 256
)

var (
	envKey    = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,127}$`)
	nameChars = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:/@+-]*$`)
)

// agents lists every agent the API names; only script runs yet.
var agents = map[string]bool{
	cpapi.AgentScript: true, cpapi.AgentBuiltin: true, cpapi.AgentClaudeCode: true,
	cpapi.AgentCodex: true, cpapi.AgentOpenCode: true, cpapi.AgentGemini: true,
}

// normalize validates a job request and fills in its defaults: agent
// builtin, network none (egress for a repository job), timeout_s from def. ErrInvalid for a malformed
// request, ErrUnprocessable for one this control plane cannot run yet.
func normalize(req cpapi.JobRequest, def time.Duration, available func(agent string) bool) (cpapi.JobRequest, error) {
	if req.Agent == "" {
		req.Agent = cpapi.AgentBuiltin
	}
	if !agents[req.Agent] {
		return req, errdefs.Invalidf("unknown agent %q", req.Agent)
	}
	switch {
	case req.Agent == cpapi.AgentScript && strings.TrimSpace(req.Command) == "":
		return req, errdefs.Invalidf("agent=script needs a command")
	case req.Agent != cpapi.AgentScript && req.Command != "":
		return req, errdefs.Invalidf("command is only for agent=script")
	case req.Agent != cpapi.AgentScript && strings.TrimSpace(req.Task) == "":
		return req, errdefs.Invalidf("task is required")
	case len(req.Task) > maxTask:
		return req, errdefs.Invalidf("task is over %d bytes", maxTask)
	case len(req.Command) > maxCommand:
		return req, errdefs.Invalidf("command is over %d bytes", maxCommand)
	case !utf8.ValidString(req.Task) || !utf8.ValidString(req.Command):
		return req, errdefs.Invalidf("task and command must be UTF-8")
	case strings.ContainsRune(req.Command, 0):
		return req, errdefs.Invalidf("command must not contain NUL")
	}
	if err := checkModel(req.Model); err != nil {
		return req, err
	}
	for what, v := range map[string]string{"runtime": req.Runtime, "template": req.Template} {
		if v != "" && (len(v) > maxName || !nameChars.MatchString(v)) {
			return req, errdefs.Invalidf("%s %q is not a valid name", what, v)
		}
	}
	switch req.Network {
	case "":
		// A repository job must reach its remote; anything else starts
		// cut off.
		req.Network = cpapi.NetworkNone
		if req.Repo != nil {
			req.Network = cpapi.NetworkEgress
		}
	case cpapi.NetworkNone, cpapi.NetworkEgress:
	default:
		return req, errdefs.Invalidf("network must be none or egress, not %q", req.Network)
	}
	switch limit := int64(MaxTimeout / time.Second); {
	case req.TimeoutS < 0:
		return req, errdefs.Invalidf("timeout_s must not be negative")
	case req.TimeoutS > limit:
		return req, errdefs.Invalidf("timeout_s must be at most %d", limit)
	case req.TimeoutS == 0:
		req.TimeoutS = int64(def / time.Second)
	}
	if err := checkResources(req.Resources); err != nil {
		return req, err
	}
	if err := checkEnv(req.Env); err != nil {
		return req, err
	}
	if err := checkLabels(req.Labels); err != nil {
		return req, err
	}
	if req.Repo != nil {
		if err := checkRepo(req.Repo); err != nil {
			return req, err
		}
	}
	if err := checkSecretNames(req.Secrets, req.Env); err != nil {
		return req, err
	}
	if !available(req.Agent) {
		return req, errdefs.Unprocessablef("agent %q is not available in this control plane: start corral up with %s", req.Agent, agentNeeds[req.Agent])
	}
	return req, nil
}

// agentNeeds says what makes an agent available.
var agentNeeds = map[string]string{
	cpapi.AgentBuiltin:    "ANTHROPIC_API_KEY, OPENAI_API_KEY or OPENAI_BASE_URL set",
	cpapi.AgentClaudeCode: "ANTHROPIC_API_KEY (or ANTHROPIC_BASE_URL) set",
	cpapi.AgentCodex:      "OPENAI_API_KEY (or OPENAI_BASE_URL) set",
	cpapi.AgentOpenCode:   "ANTHROPIC_API_KEY or OPENAI_API_KEY set",
	cpapi.AgentGemini:     "GEMINI_API_KEY (or GOOGLE_GEMINI_BASE_URL) set",
}

// checkRepo validates a repository: a URL git can clone (http(s), ssh,
// git or scp-like), a ref without option-like or control characters, a
// secret name.
func checkRepo(r *cpapi.Repo) error {
	u := r.URL
	switch {
	case u == "":
		return errdefs.Invalidf("repo needs a url")
	case len(u) > 2048 || strings.HasPrefix(u, "-") || strings.ContainsAny(u, " \t\n\r\x00"):
		return errdefs.Invalidf("repo.url %q is not a URL git can clone", u)
	case !strings.HasPrefix(u, "https://") && !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "ssh://") &&
		!strings.HasPrefix(u, "git://") && !scpLike.MatchString(u):
		return errdefs.Invalidf("repo.url %q must be http(s)://, ssh://, git:// or user@host:path", u)
	case len(r.Ref) > 255 || strings.HasPrefix(r.Ref, "-") || strings.ContainsAny(r.Ref, " ~^:?*[\\\x00\t\n") || strings.Contains(r.Ref, ".."):
		return errdefs.Invalidf("repo.ref %q is not a valid branch, tag or commit", r.Ref)
	case r.Secret != "" && !envKey.MatchString(r.Secret):
		return errdefs.Invalidf("repo.secret %q is not a secret name", r.Secret)
	}
	return nil
}

var scpLike = regexp.MustCompile(`^[A-Za-z0-9._-]+@[A-Za-z0-9.-]+:[^/]`)

// checkSecretNames accepts secret names that do not clash with env.
func checkSecretNames(names []string, env map[string]string) error {
	if len(names) > maxEnv {
		return errdefs.Invalidf("at most %d secrets", maxEnv)
	}
	for _, n := range names {
		switch {
		case !envKey.MatchString(n):
			return errdefs.Invalidf("secret name %q must match %s", n, envKey)
		case strings.HasPrefix(strings.ToUpper(n), "CORRAL_"):
			return errdefs.Invalidf("secret name %q: CORRAL_* is reserved", n)
		}
		if _, ok := env[n]; ok {
			return errdefs.Invalidf("%s is both in env and in secrets", n)
		}
	}
	return nil
}

// checkModel accepts "" or "<provider>/<name>" with a provider Corral
// knows: openai, anthropic, and google (or gemini) for the Gemini CLI.
func checkModel(model string) error {
	if model == "" {
		return nil
	}
	provider, name, ok := strings.Cut(model, "/")
	switch {
	case !ok || name == "" || len(model) > maxName || !nameChars.MatchString(name):
		return errdefs.Invalidf("model %q must be provider/name: openai/<name>, anthropic/<name> or google/<name>", model)
	case provider != "openai" && provider != "anthropic" && provider != "google" && provider != "gemini":
		return errdefs.Invalidf("model %q: unknown provider %q (openai, anthropic or google)", model, provider)
	}
	return nil
}

func checkResources(r *cpapi.Resources) error {
	if r == nil {
		return nil
	}
	switch {
	case math.IsNaN(r.CPUs) || r.CPUs < 0 || r.CPUs > maxCPUs:
		return errdefs.Invalidf("resources.cpus must be between 0 and %d", maxCPUs)
	case r.MemoryMB < 0 || r.MemoryMB > maxMemoryMB:
		return errdefs.Invalidf("resources.memory_mb must be between 0 and %d", maxMemoryMB)
	case r.PIDs < 0 || r.PIDs > maxPIDs:
		return errdefs.Invalidf("resources.pids must be between 0 and %d", maxPIDs)
	case r.DiskMB < 0 || r.DiskMB > maxDiskMB:
		return errdefs.Invalidf("resources.disk_mb must be between 0 and %d", maxDiskMB)
	}
	return nil
}

// checkEnv accepts shell-style names, none reserved by Corral (CORRAL_*).
func checkEnv(env map[string]string) error {
	if len(env) > maxEnv {
		return errdefs.Invalidf("at most %d env variables", maxEnv)
	}
	total := 0
	for k, v := range env {
		switch {
		case !envKey.MatchString(k):
			return errdefs.Invalidf("env name %q must match %s", k, envKey)
		case strings.HasPrefix(strings.ToUpper(k), "CORRAL_"):
			return errdefs.Invalidf("env name %q: CORRAL_* is reserved", k)
		case strings.ContainsRune(v, 0):
			return errdefs.Invalidf("env %s must not contain NUL", k)
		}
		total += len(k) + len(v)
	}
	if total > maxEnvBytes {
		return errdefs.Invalidf("env is over %d bytes", maxEnvBytes)
	}
	return nil
}

func checkLabels(labels map[string]string) error {
	if len(labels) > maxLabels {
		return errdefs.Invalidf("at most %d labels", maxLabels)
	}
	for k, v := range labels {
		if k == "" || len(k) > maxLabelKey || len(v) > maxLabelValue {
			return errdefs.Invalidf("label %q: keys must be 1-%d bytes, values at most %d", k, maxLabelKey, maxLabelValue)
		}
	}
	return nil
}
