package cli

import (
	"os"

	"github.com/corral-sh/corral/internal/sandboxd/gitops"
)

// askpass answers a git credential prompt when sandboxd runs this binary
// as git's GIT_ASKPASS program (see package gitops): with the askpass
// socket variable set and a prompt as the only argument, it relays the
// prompt to the daemon and prints the answer, without cobra. handled is
// false for every other command line.
func askpass(args []string) (handled bool, err error) {
	return gitops.Askpass(args, os.Stdout)
}
