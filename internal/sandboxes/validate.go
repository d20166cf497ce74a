package sandboxes

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/corral-sh/corral/api/cpapi"
	"github.com/corral-sh/corral/internal/errdefs"
	"github.com/corral-sh/corral/internal/runtime"
)

// Bounds of a request. Limits above these are mistakes, not wishes.
const (
	maxCPUs       = 1024
	maxMemoryMB   = 1 << 22 // 4 TiB
	maxPIDs       = 1 << 22
	maxDiskMB     = 1 << 24 // 16 TiB
	maxEnv        = 256
	maxEnvValue   = 128 << 10
	maxLabels     = 64
	maxLabelKey   = 63
	maxLabelValue = 256
	maxTemplate   = 256
)

var envKey = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// plan is a validated request: what to record and what to ask the
// runtime for.
type plan struct {
	runtimeName string
	rt          runtime.Runtime
	spec        runtime.Spec // without ID
	timeout     time.Duration
	stored      json.RawMessage // the accepted request, env values left out
}

// storedSpec is what the record keeps of a request: env values may be
// secrets, so only their names are stored.
type storedSpec struct {
	cpapi.SandboxRequest
	EnvKeys []string `json:"env_keys,omitempty"`
}

// plan validates req and fills in the defaults.
func (s *Service) plan(req cpapi.SandboxRequest, opts CreateOptions) (*plan, error) {
	p := &plan{runtimeName: req.Runtime}
	if p.runtimeName == "" {
		p.runtimeName = s.def
	}
	p.rt = s.runtimes[p.runtimeName]
	if p.rt == nil {
		return nil, errdefs.Unprocessablef("runtime %q is not available here; available: %s",
			p.runtimeName, strings.Join(s.names, ", "))
	}
	template := req.Template
	if template == "" {
		template = s.template
	}
	if err := checkTemplate(template); err != nil {
		return nil, err
	}
	network := req.Network
	switch network {
	case "":
		network = runtime.NetworkNone
	case runtime.NetworkNone, runtime.NetworkEgress:
	default:
		return nil, errdefs.Invalidf("network %q must be %q or %q", network, runtime.NetworkNone, runtime.NetworkEgress)
	}
	res, err := checkResources(req.Resources)
	if err != nil {
		return nil, err
	}
	if p.timeout, err = s.checkTimeout(req.TimeoutS); err != nil {
		return nil, err
	}
	if err := checkEnv(req.Env); err != nil {
		return nil, err
	}
	labels, err := checkLabels(req.Labels)
	if err != nil {
		return nil, err
	}
	if opts.JobID != "" {
		if len(opts.JobID) > maxLabelValue {
			return nil, errdefs.Invalidf("job id is over %d bytes", maxLabelValue)
		}
		labels[LabelJob] = opts.JobID
	}
	p.spec = runtime.Spec{Template: template, Resources: res, Network: network,
		Env: maps.Clone(req.Env), Labels: labels}

	accepted := req
	accepted.Runtime, accepted.Template, accepted.Network, accepted.Env = p.runtimeName, template, network, nil
	accepted.Labels = labels
	p.stored, err = json.Marshal(storedSpec{SandboxRequest: accepted, EnvKeys: slices.Sorted(maps.Keys(req.Env))})
	if err != nil {
		return nil, fmt.Errorf("encode sandbox spec: %w", err)
	}
	return p, nil
}

func checkTemplate(t string) error {
	if len(t) > maxTemplate {
		return errdefs.Invalidf("template is over %d bytes", maxTemplate)
	}
	if i := strings.IndexFunc(t, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }); i >= 0 {
		return errdefs.Invalidf("template %q must not contain spaces or control characters", t)
	}
	return nil
}

func checkResources(r *cpapi.Resources) (runtime.Resources, error) {
	if r == nil {
		return runtime.Resources{}, nil
	}
	switch {
	case math.IsNaN(r.CPUs) || r.CPUs < 0 || r.CPUs > maxCPUs:
		return runtime.Resources{}, errdefs.Invalidf("resources.cpus must be from 0 to %d", maxCPUs)
	case r.MemoryMB < 0 || r.MemoryMB > maxMemoryMB:
		return runtime.Resources{}, errdefs.Invalidf("resources.memory_mb must be from 0 to %d", maxMemoryMB)
	case r.PIDs < 0 || r.PIDs > maxPIDs:
		return runtime.Resources{}, errdefs.Invalidf("resources.pids must be from 0 to %d", maxPIDs)
	case r.DiskMB < 0 || r.DiskMB > maxDiskMB:
		return runtime.Resources{}, errdefs.Invalidf("resources.disk_mb must be from 0 to %d", maxDiskMB)
	}
	return runtime.Resources{CPUs: r.CPUs, MemoryMB: r.MemoryMB, PIDs: r.PIDs, DiskMB: r.DiskMB}, nil
}

// checkTimeout accepts 0 (no deadline) to MaxTimeout seconds.
func (s *Service) checkTimeout(sec int64) (time.Duration, error) {
	limit := int64(s.maxTimeout / time.Second)
	if sec < 0 || sec > limit {
		return 0, errdefs.Invalidf("timeout_s %d must be from 0 to %d", sec, limit)
	}
	return time.Duration(sec) * time.Second, nil
}

func checkEnv(env map[string]string) error {
	if len(env) > maxEnv {
		return errdefs.Invalidf("at most %d env variables", maxEnv)
	}
	for k, v := range env {
		switch {
		case !envKey.MatchString(k):
			return errdefs.Invalidf("env name %q must be letters, digits and '_', not starting with a digit", k)
		case k == runtime.TokenEnv:
			return errdefs.Invalidf("env name %q is reserved", k)
		case len(v) > maxEnvValue || strings.IndexByte(v, 0) >= 0:
			return errdefs.Invalidf("env %s: values must be at most %d bytes, without NUL", k, maxEnvValue)
		}
	}
	return nil
}

// checkLabels returns a copy of labels (never nil) after checking them.
func checkLabels(labels map[string]string) (map[string]string, error) {
	if len(labels) > maxLabels-1 { // one is kept for corral.job
		return nil, errdefs.Invalidf("at most %d labels", maxLabels-1)
	}
	for k, v := range labels {
		switch {
		case k == "" || len(k) > maxLabelKey || len(v) > maxLabelValue:
			return nil, errdefs.Invalidf("label %q: keys must be 1-%d bytes, values at most %d", k, maxLabelKey, maxLabelValue)
		case strings.HasPrefix(k, "corral."):
			return nil, errdefs.Invalidf("label %q: the corral. prefix is reserved", k)
		}
	}
	out := make(map[string]string, len(labels)+1)
	maps.Copy(out, labels)
	return out, nil
}
