//go:build !slim

package cli

import (
	"github.com/spf13/cobra"

	"github.com/corral-sh/corral/internal/bench"
	"github.com/corral-sh/corral/internal/runtime"
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
			self, err := runtime.SandboxdBinary()
			if err != nil {
				return err
			}
			return bench.RunSandboxd(cmd.Context(), cmd.OutOrStdout(), bench.SandboxdOptions{Binary: self, Quick: quick})
		},
	}
	sd.Flags().BoolVar(&quick, "quick", false, "small sample counts and sizes (a smoke run)")
	var backends []string
	rt := &cobra.Command{
		Use:   "runtime",
		Short: "Benchmark the runtime backends: create latency, warm-pool claims, memory per sandbox, capacity",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			self, err := runtime.SandboxdBinary()
			if err != nil {
				return err
			}
			return bench.RunRuntime(cmd.Context(), cmd.OutOrStdout(), bench.RuntimeOptions{Binary: self, Backends: backends, Quick: quick})
		},
	}
	rt.Flags().BoolVar(&quick, "quick", false, "few samples and a short capacity curve (a smoke run)")
	rt.Flags().StringSliceVar(&backends, "backend", nil, "backends to measure (default bwrap,containerd,docker)")
	var pg string
	cp := &cobra.Command{
		Use:   "controlplane",
		Short: "Benchmark the control plane: job start latency, jobs/s, event append rate, SSE fan-out, proxy overhead",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			self, err := runtime.SandboxdBinary()
			if err != nil {
				return err
			}
			return bench.RunControlPlane(cmd.Context(), cmd.OutOrStdout(), bench.ControlPlaneOptions{Binary: self, Postgres: pg, Quick: quick})
		},
	}
	cp.Flags().BoolVar(&quick, "quick", false, "few samples (a smoke run)")
	cp.Flags().StringVar(&pg, "postgres", "", "PostgreSQL URL for the event-append figure (scripts/postgres.sh prints one)")
	cmd.AddCommand(sd, rt, cp)
	return cmd
}
