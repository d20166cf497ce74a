package sandboxd_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the run if any goroutine outlives the tests: every
// daemon is shut down by its test, and with it every stream, waiter and
// pump it started.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
