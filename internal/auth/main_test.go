package auth

import (
	"testing"

	"go.uber.org/goleak"
)

// The package starts no goroutines; nothing a test starts may outlive it.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
