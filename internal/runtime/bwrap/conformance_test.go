package bwrap

import (
	"os"
	"testing"

	"github.com/corral-sh/corral/internal/runtime"
	"github.com/corral-sh/corral/internal/runtime/runtimetest"
)

func TestConformance(t *testing.T) {
	r := newTestRuntime(t) // skips when bwrap cannot run here
	opts := runtimetest.Options{Template: testTemplate, Unsupported: map[string]string{}}
	switch {
	case os.Geteuid() != 0:
		for _, c := range []string{runtimetest.CheckMemory, runtimetest.CheckPIDs, runtimetest.CheckNproc} {
			opts.Unsupported[c] = "cgroup limits need root"
		}
	case r.cg == nil:
		for _, c := range []string{runtimetest.CheckMemory, runtimetest.CheckPIDs, runtimetest.CheckNproc} {
			opts.Unsupported[c] = "no cgroups: " + r.cgErr.Error()
		}
	}
	runtimetest.Run(t, func(t testing.TB) runtime.Runtime { return newTestRuntime(t) }, opts)
}
