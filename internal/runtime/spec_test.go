package runtime

import (
	"errors"
	"math"
	"testing"

	"github.com/corral-sh/corral/internal/errdefs"
)

func TestNormalize(t *testing.T) {
	tests := []struct {
		name string
		spec Spec
		want error
	}{
		{"defaults", Spec{}, nil},
		{"bad id", Spec{ID: "Bad/ID"}, errdefs.ErrInvalid},
		{"bad network", Spec{Network: "bridge"}, errdefs.ErrInvalid},
		{"negative memory", Spec{Resources: Resources{MemoryMB: -1}}, errdefs.ErrInvalid},
		{"NaN cpus", Spec{Resources: Resources{CPUs: math.NaN()}}, errdefs.ErrInvalid},
		{"bad env name", Spec{Env: map[string]string{"A=B": "x"}}, errdefs.ErrInvalid},
		{"NUL in env value", Spec{Env: map[string]string{"A": "x\x00"}}, errdefs.ErrInvalid},
		{"token env reserved", Spec{Env: map[string]string{TokenEnv: "spoof"}}, errdefs.ErrInvalid},
		{"empty label key", Spec{Labels: map[string]string{"": "v"}}, errdefs.ErrInvalid},
	}
	for _, tt := range tests {
		got, err := Normalize(tt.spec)
		if !errors.Is(err, tt.want) || (err == nil && (got.ID == "" || got.Network != NetworkNone)) {
			t.Errorf("%s: Normalize(%+v) = %+v, %v; want %v", tt.name, tt.spec, got, err, tt.want)
		}
	}
	env := map[string]string{"A": "1"}
	got, _ := Normalize(Spec{Env: env})
	got.Env["A"] = "changed"
	if env["A"] != "1" {
		t.Errorf("Normalize shares the caller's env map")
	}
}
