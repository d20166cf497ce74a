package gittest

import (
	"fmt"
	"os"
	"syscall"

	"github.com/corral-sh/corral/internal/sandboxd/gitops"
)

// ServeAskpass lets a test binary stand in for the corral binary as the
// daemon's askpass program. A daemon runs git with GIT_ASKPASS set to its
// own executable, which in a test is the test binary; when git runs it
// with a credential prompt, ServeAskpass answers through the daemon and
// exits, as corral's command line does (internal/cli/askpass.go). Call it
// from an init function of every test package that runs git with
// credentials through a daemon in the test process:
//
//	func init() { gittest.ServeAskpass() }
func ServeAskpass() {
	handled, err := gitops.Askpass(os.Args[1:], os.Stdout)
	if !handled {
		return
	}
	code := 0
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		code = 1
	}
	// syscall.Exit, not os.Exit: a test binary built with -race pauses a
	// second in os.Exit(0) (the race runtime's atexit sleep), once per
	// prompt. Nothing is buffered: os.Stdout writes straight through.
	syscall.Exit(code)
}
