// Package runtimetest is the conformance suite every runtime backend
// passes (STYLE.md: one suite, run per backend through a factory), plus
// the helpers backend tests share: a static corral binary to mount and a
// template to create sandboxes from.
package runtimetest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
)

var (
	binaryOnce sync.Once
	binaryPath string
	binaryErr  error
)

// Binary returns a static corral binary for sandboxes to run: the one
// named by $CORRAL_TEST_BINARY (make test builds it once), else one built
// now, once per test process.
func Binary(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("CORRAL_TEST_BINARY"); p != "" {
		return p
	}
	binaryOnce.Do(func() {
		dir := filepath.Join(os.TempDir(), "corral-runtimetest")
		if binaryErr = os.MkdirAll(dir, 0o755); binaryErr != nil {
			return
		}
		tmp := filepath.Join(dir, "corral."+strconv.Itoa(os.Getpid()))
		cmd := exec.Command("go", "build", "-o", tmp, "github.com/corral-sh/corral/cmd/corral")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			binaryErr = &buildError{out: string(out), err: err}
			return
		}
		binaryPath = filepath.Join(dir, "corral")
		binaryErr = os.Rename(tmp, binaryPath) // atomic: running sandboxes keep their inode
	})
	if binaryErr != nil {
		t.Fatalf("build static corral binary: %v", binaryErr)
	}
	return binaryPath
}

type buildError struct {
	out string
	err error
}

func (e *buildError) Error() string { return e.err.Error() + ": " + e.out }
