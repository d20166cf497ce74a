package cli

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/corral-sh/corral/internal/bench"
)

func benchCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure Corral's components against the numbers to beat",
	}
	var quick bool
	sd := &cobra.Command{
		Use:   "sandboxd",
		Short: "Benchmark the sandbox daemon: exec latency and throughput, PTY echo, output and file throughput, memory",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			self, err := os.Executable()
			if err != nil {
				return fmt.Errorf("find own binary: %w", err)
			}
			return bench.RunSandboxd(cmd.Context(), cmd.OutOrStdout(), bench.SandboxdOptions{Binary: self, Quick: quick})
		},
	}
	sd.Flags().BoolVar(&quick, "quick", false, "small sample counts and sizes (a smoke run)")
	cmd.AddCommand(sd)
	return cmd
}
