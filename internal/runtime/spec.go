package runtime

import (
	"maps"
	"math"
	"strings"

	"github.com/corral-sh/corral/internal/errdefs"
)

// Normalize fills a spec's common defaults — a new ID, network none — and
// rejects what no backend could run: a bad id or network, negative or
// non-finite limits, environment names that are empty or hold '=' or NUL
// (or values with NUL), sandboxd's own token variable, empty label keys.
// Its maps are copies, so a backend may keep the spec. Backends then apply
// what is theirs: the template, and limits they cannot honour.
func Normalize(spec Spec) (Spec, error) {
	if spec.ID == "" {
		spec.ID = NewID()
	}
	if err := CheckID(spec.ID); err != nil {
		return spec, err
	}
	switch spec.Network {
	case "":
		spec.Network = NetworkNone
	case NetworkNone, NetworkEgress:
	default:
		return spec, errdefs.Invalidf("network %q must be %q or %q", spec.Network, NetworkNone, NetworkEgress)
	}
	res := spec.Resources
	if res.CPUs < 0 || math.IsNaN(res.CPUs) || math.IsInf(res.CPUs, 0) || res.MemoryMB < 0 || res.PIDs < 0 || res.DiskMB < 0 {
		return spec, errdefs.Invalidf("resources must be finite and not negative: %+v", res)
	}
	for k, v := range spec.Env {
		if k == "" || strings.ContainsAny(k, "=\x00") || strings.ContainsRune(v, 0) {
			return spec, errdefs.Invalidf("environment variable %q is not a valid name=value", k)
		}
		if k == TokenEnv {
			return spec, errdefs.Invalidf("environment variable %s is reserved for sandboxd's token", k)
		}
	}
	for k := range spec.Labels {
		if k == "" {
			return spec, errdefs.Invalidf("label keys must not be empty")
		}
	}
	spec.Env = maps.Clone(spec.Env)
	spec.Labels = maps.Clone(spec.Labels)
	return spec, nil
}
