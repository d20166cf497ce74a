// Package testenv holds helpers for tests that depend on the machine: an
// engine, a database, a system tool.
package testenv

import (
	"os"
	"testing"
)

// Unavailable is for a backend (or template) the test cannot use here. On
// a developer's machine it skips with the reason; in CI (CI=true), where
// scripts/deps.sh and scripts/engines.sh provide every engine, it fails,
// so a broken engine can never pass as a skipped test.
func Unavailable(t testing.TB, format string, args ...any) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("in CI every runtime must be available: "+format, args...)
	}
	t.Skipf(format, args...)
}
