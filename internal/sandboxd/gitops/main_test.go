package gitops_test

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/corral-sh/corral/internal/gittest"
)

// The test binary is the askpass program of the services the tests start
// (their default Askpass is os.Executable()).
func init() { gittest.ServeAskpass() }

// TestMain gives git a HOME without configuration, so the machine's
// ~/.gitconfig changes nothing, and fails the run if a goroutine outlives
// the tests (an askpass server left serving, a runner left waiting).
func TestMain(m *testing.M) {
	home, err := os.MkdirTemp("", "gitops-home-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Setenv("HOME", home)
	code := m.Run()
	os.RemoveAll(home)
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	os.Exit(code)
}
