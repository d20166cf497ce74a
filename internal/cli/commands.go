//go:build !slim

package cli

import "github.com/spf13/cobra"

// commands is every corral command. The slim build (-tags slim, see
// commands_slim.go) keeps only what runs inside a sandbox.
func commands() []*cobra.Command {
	return []*cobra.Command{versionCmd(), upCmd(), sandboxdCmd(), attachCmd(), execCmd(), benchCmd(), runtimeCmd(), templateCmd(),
		runJobCmd(), jobsCmd(), statusCmd(), logsCmd(), cancelCmd(), sendCmd(), artifactsCmd(), sandboxCmd(), shellCmd(), tokenCmd(), secretCmd(), tenantCmd()}
}
