package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/corral-sh/corral/internal/version"
)

func versionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print corral's version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintln(cmd.OutOrStdout(), "corral", version.String())
			return err
		},
	}
}
