//go:build !slim

package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/corral-sh/corral/api/cpapi"
	"github.com/corral-sh/corral/client"
)

func tokenCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:     "token",
		Aliases: []string{"tokens"},
		Short:   "Create, list and revoke API tokens",
	}
	cmd.AddCommand(tokenCreateCmd(), tokenLsCmd(), tokenRevokeCmd())
	return cmd
}

func tokenCreateCmd() *cobra.Command {
	var (
		cf  cpFlags
		req cpapi.TokenRequest
	)
	cmd := &cobra.Command{
		Use:   "create <name>",
		Short: "Create a token and print its secret, shown this once",
		Long: `create makes an API token for your tenant (or, for an admin, for --tenant,
created if new) and prints its secret on stdout. The server keeps only a
hash: the secret cannot be shown again.`,
		Args: cobra.ExactArgs(1),
		RunE: cf.run(func(ctx context.Context, cp *client.ControlPlane, cmd *cobra.Command, args []string) error {
			req.Name = args[0]
			tok, err := cp.CreateToken(ctx, req)
			if err != nil {
				return err
			}
			if cf.json {
				return printJSON(cmd.OutOrStdout(), tok)
			}
			if _, err := fmt.Fprintln(cmd.OutOrStdout(), tok.Secret); err != nil {
				return err
			}
			errOut := cmd.ErrOrStderr()
			fmt.Fprintln(errOut, paint(colorOK(errOut), styleDim,
				fmt.Sprintf("token %s (%s) for tenant %s; keep the secret above, it is not shown again", tok.ID, tok.Name, tok.Tenant)))
			return nil
		}),
	}
	cf.register(cmd, true)
	cmd.Flags().BoolVar(&req.Admin, "admin", false, "an admin token (needs an admin token)")
	cmd.Flags().StringVar(&req.Tenant, "tenant", "", "the tenant the token belongs to (needs an admin token; default yours)")
	return cmd
}

func tokenLsCmd() *cobra.Command {
	var cf cpFlags
	cmd := &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   "List your tenant's tokens (never their secrets)",
		Args:    cobra.NoArgs,
		RunE: cf.run(func(ctx context.Context, cp *client.ControlPlane, cmd *cobra.Command, _ []string) error {
			list, err := cp.ListTokens(ctx)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if cf.json {
				return printJSON(out, cpapi.TokenList{Tokens: list})
			}
			tw := newTable(out)
			fmt.Fprintln(tw, "ID\tNAME\tTENANT\tADMIN\tCREATED\tLAST USED")
			for _, t := range list {
				admin, used := "", "never"
				if t.Admin {
					admin = "yes"
				}
				if t.LastUsedAt != nil {
					used = age(*t.LastUsedAt) + " ago"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s ago\t%s\n", t.ID, t.Name, t.Tenant, admin, age(t.CreatedAt), used)
			}
			return tw.Flush()
		}),
	}
	cf.register(cmd, true)
	return cmd
}

func tokenRevokeCmd() *cobra.Command {
	var cf cpFlags
	cmd := &cobra.Command{
		Use:   "revoke <id>...",
		Short: "Revoke tokens: requests bearing them fail from now on",
		Args:  cobra.MinimumNArgs(1),
		RunE: cf.run(func(ctx context.Context, cp *client.ControlPlane, cmd *cobra.Command, args []string) error {
			for _, id := range args {
				if err := cp.RevokeToken(ctx, id); err != nil {
					return err
				}
				fmt.Fprintln(cmd.OutOrStdout(), id)
			}
			return nil
		}),
	}
	cf.register(cmd, false)
	return cmd
}
