//go:build !slim

package cli

import (
	"context"
	"fmt"
	"io"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/corral-sh/corral/api/cpapi"
	"github.com/corral-sh/corral/client"
)

func tenantCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:     "tenant",
		Aliases: []string{"tenants"},
		Short:   "List tenants and change their limits (admin)",
	}
	cmd.AddCommand(tenantLsCmd(), tenantShowCmd(), tenantLimitsCmd())
	return cmd
}

func tenantLsCmd() *cobra.Command {
	var cf cpFlags
	cmd := &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   "List every tenant with its limits (needs an admin token)",
		Args:    cobra.NoArgs,
		RunE: cf.run(func(ctx context.Context, cp *client.ControlPlane, cmd *cobra.Command, _ []string) error {
			list, err := cp.ListTenants(ctx)
			if err != nil {
				return err
			}
			if cf.json {
				return printJSON(cmd.OutOrStdout(), cpapi.TenantList{Tenants: list})
			}
			return printTenants(cmd.OutOrStdout(), list...)
		}),
	}
	cf.register(cmd, true)
	return cmd
}

func tenantShowCmd() *cobra.Command {
	var cf cpFlags
	cmd := &cobra.Command{
		Use:   "show <id>",
		Short: "Show a tenant and its limits (yours, or any with an admin token)",
		Args:  cobra.ExactArgs(1),
		RunE: cf.run(func(ctx context.Context, cp *client.ControlPlane, cmd *cobra.Command, args []string) error {
			t, err := cp.GetTenant(ctx, args[0])
			return showTenant(cmd.OutOrStdout(), cf.json, t, err)
		}),
	}
	cf.register(cmd, true)
	return cmd
}

func tenantLimitsCmd() *cobra.Command {
	var (
		cf              cpFlags
		jobs, sandboxes int
	)
	cmd := &cobra.Command{
		Use:   "limits <id> [--max-jobs N] [--max-sandboxes N]",
		Short: "Change a tenant's limits (needs an admin token); 0 lifts a limit",
		Long: `limits changes the limits of an existing tenant; the ones not given are
kept. They apply from the next job claimed or sandbox created: jobs and
sandboxes the tenant already has are not stopped.`,
		Args: cobra.ExactArgs(1),
		RunE: cf.run(func(ctx context.Context, cp *client.ControlPlane, cmd *cobra.Command, args []string) error {
			var limits cpapi.TenantLimits
			jobsSet, sbSet := cmd.Flags().Changed("max-jobs"), cmd.Flags().Changed("max-sandboxes")
			if !jobsSet && !sbSet {
				return fmt.Errorf("give --max-jobs, --max-sandboxes or both")
			}
			if jobsSet {
				limits.MaxConcurrentJobs = &jobs
			}
			if sbSet {
				limits.MaxSandboxes = &sandboxes
			}
			t, err := cp.SetTenantLimits(ctx, args[0], limits)
			return showTenant(cmd.OutOrStdout(), cf.json, t, err)
		}),
	}
	cf.register(cmd, true)
	cmd.Flags().IntVar(&jobs, "max-jobs", 0, "jobs the tenant may run at once (0: unlimited)")
	cmd.Flags().IntVar(&sandboxes, "max-sandboxes", 0, "sandboxes the tenant may hold (0: unlimited)")
	return cmd
}

// showTenant prints the tenant an API call answered, or returns its error.
func showTenant(out io.Writer, asJSON bool, t *cpapi.Tenant, err error) error {
	if err != nil {
		return err
	}
	if asJSON {
		return printJSON(out, t)
	}
	return printTenants(out, *t)
}

func printTenants(out io.Writer, ts ...cpapi.Tenant) error {
	tw := newTable(out)
	fmt.Fprintln(tw, "ID\tNAME\tMAX JOBS\tMAX SANDBOXES\tCREATED")
	for _, t := range ts {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s ago\n", t.ID, t.Name, limitText(t.MaxConcurrentJobs), limitText(t.MaxSandboxes), age(t.CreatedAt))
	}
	return tw.Flush()
}

func limitText(n int) string {
	if n == 0 {
		return "unlimited"
	}
	return strconv.Itoa(n)
}
