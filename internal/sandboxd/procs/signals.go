package procs

import (
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/corral-sh/corral/internal/errdefs"
)

// ParseSignal accepts "SIGINT", "INT", "sigint" or "2".
func ParseSignal(s string) (syscall.Signal, error) {
	s = strings.TrimSpace(s)
	if n, err := strconv.Atoi(s); err == nil {
		if n < 1 || n > 64 {
			return 0, errdefs.Invalidf("signal number %d out of range 1..64", n)
		}
		return syscall.Signal(n), nil
	}
	name := strings.ToUpper(s)
	if !strings.HasPrefix(name, "SIG") {
		name = "SIG" + name
	}
	if sig := unix.SignalNum(name); sig != 0 {
		return sig, nil
	}
	return 0, errdefs.Invalidf("unknown signal %q", s)
}

// SignalName returns "SIGKILL" for 9, or the number as text when unnamed.
func SignalName(sig syscall.Signal) string {
	if name := unix.SignalName(sig); name != "" {
		return name
	}
	return strconv.Itoa(int(sig))
}
