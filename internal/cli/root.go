// Package cli defines corral's cobra commands. Each command parses flags
// and calls into the packages that do the work.
package cli

import (
	"context"
	"errors"

	"github.com/spf13/cobra"
)

// Run executes the command line args.
func Run(ctx context.Context, args []string) error {
	if handled, err := askpass(args); handled {
		return err
	}
	root := &cobra.Command{
		Use:           "corral",
		Short:         "Run AI coding agents in isolated sandboxes",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(commands()...)
	root.SetArgs(args)
	return root.ExecuteContext(ctx)
}

// ExitError carries a specific exit status (for example a remote
// process's exit code) out of a command.
type ExitError struct{ Code int }

func (e *ExitError) Error() string { return "exit status" }

// Quiet reports whether err needs no message: an *ExitError only passes
// on a remote process's status, which has spoken for itself.
func Quiet(err error) bool {
	var ee *ExitError
	return errors.As(err, &ee)
}

// ExitCode maps an error from Run to a process exit status.
func ExitCode(err error) int {
	var ee *ExitError
	if errors.As(err, &ee) {
		return ee.Code
	}
	return 1
}
