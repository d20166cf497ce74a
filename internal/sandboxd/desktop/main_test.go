package desktop

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the run if a goroutine outlives the tests: every
// session's owner, process waiters, output readers and X connection end
// when the desktop stops.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
