//go:build slim

package cli

import "github.com/spf13/cobra"

// commands is what runs inside a sandbox: the daemon and the commands that
// talk to it. The slim build links none of the control plane, the runtime
// engines' clients or the databases, so the daemon in every sandbox starts
// faster and stays small (make build writes it as bin/corral-sandboxd).
func commands() []*cobra.Command {
	return []*cobra.Command{versionCmd(), sandboxdCmd(), attachCmd(), execCmd()}
}
