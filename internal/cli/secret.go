//go:build !slim

package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/corral-sh/corral/api/cpapi"
	"github.com/corral-sh/corral/client"
	"github.com/corral-sh/corral/internal/secrets"
)

func secretCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:     "secret",
		Aliases: []string{"secrets"},
		Short:   "Set, list and delete your tenant's secrets (tokens and keys jobs receive)",
		Long: `Secrets are stored encrypted by the control plane and given to jobs that
name them: as environment variables of the agent's processes (a job's
"secrets") or as the token of its repository ("repo.secret"). They can be
set, listed and deleted, never read back.`,
	}
	cmd.AddCommand(secretSetCmd(), secretLsCmd(), secretRmCmd())
	return cmd
}

func secretSetCmd() *cobra.Command {
	var cf cpFlags
	cmd := &cobra.Command{
		Use:   "set NAME [VALUE]",
		Short: "Create a secret or replace its value",
		Long: `set stores VALUE as the secret NAME (letters, digits and '_', not starting
with a digit). Without VALUE, or with "-", the value is read from stdin,
which keeps it out of your shell history: typed at a terminal without echo,
or piped (one trailing newline is removed):

  corral secret set GITHUB_TOKEN
  gh auth token | corral secret set GITHUB_TOKEN`,
		Args: cobra.RangeArgs(1, 2),
		RunE: cf.run(func(ctx context.Context, cp *client.ControlPlane, cmd *cobra.Command, args []string) error {
			name := args[0]
			if err := secrets.CheckName(name); err != nil {
				return err
			}
			value, err := secretValue(cmd, args)
			if err != nil {
				return err
			}
			sec, created, err := cp.SetSecret(ctx, name, value)
			if err != nil {
				return err
			}
			if cf.json {
				return printJSON(cmd.OutOrStdout(), sec)
			}
			what := "replaced"
			if created {
				what = "created"
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "%s %s\n", what, sec.Name)
			return err
		}),
	}
	cf.register(cmd, true)
	return cmd
}

// secretValue is the value argument, else stdin: read without echo from a
// terminal, else to its end, minus one trailing newline.
func secretValue(cmd *cobra.Command, args []string) (string, error) {
	if len(args) == 2 && args[1] != "-" {
		return args[1], nil
	}
	in := cmd.InOrStdin()
	if fd, ok := terminalFD(in); ok {
		fmt.Fprintf(cmd.ErrOrStderr(), "value of %s (not shown): ", args[0])
		b, err := term.ReadPassword(fd)
		fmt.Fprintln(cmd.ErrOrStderr())
		if err != nil {
			return "", fmt.Errorf("read the value: %w", err)
		}
		return checkRead(string(b))
	}
	// Room for the largest value and a CRLF; one byte more means too long.
	b, err := io.ReadAll(io.LimitReader(in, secrets.MaxValueBytes+3))
	if err != nil {
		return "", fmt.Errorf("read the value from stdin: %w", err)
	}
	v := string(b)
	if strings.HasSuffix(v, "\r\n") {
		v = v[:len(v)-2]
	} else if strings.HasSuffix(v, "\n") {
		v = v[:len(v)-1]
	}
	if len(b) > secrets.MaxValueBytes+2 || len(v) > secrets.MaxValueBytes {
		return "", fmt.Errorf("the value on stdin is over %d bytes, the limit for a secret", secrets.MaxValueBytes)
	}
	return checkRead(v)
}

func checkRead(v string) (string, error) {
	if v == "" {
		return "", errors.New("the value is empty: give it as an argument, type it, or pipe it to stdin")
	}
	return v, nil
}

func secretLsCmd() *cobra.Command {
	var cf cpFlags
	cmd := &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   "List your tenant's secrets (names, never values)",
		Args:    cobra.NoArgs,
		RunE: cf.run(func(ctx context.Context, cp *client.ControlPlane, cmd *cobra.Command, _ []string) error {
			list, err := cp.ListSecrets(ctx)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if cf.json {
				return printJSON(out, cpapi.SecretList{Secrets: list})
			}
			tw := newTable(out)
			fmt.Fprintln(tw, "NAME\tCREATED\tUPDATED")
			for _, s := range list {
				fmt.Fprintf(tw, "%s\t%s ago\t%s ago\n", s.Name, age(s.CreatedAt), age(s.UpdatedAt))
			}
			return tw.Flush()
		}),
	}
	cf.register(cmd, true)
	return cmd
}

func secretRmCmd() *cobra.Command {
	var cf cpFlags
	cmd := &cobra.Command{
		Use:     "rm NAME...",
		Aliases: []string{"delete"},
		Short:   "Delete secrets: jobs that name them fail from now on",
		Args:    cobra.MinimumNArgs(1),
		RunE: cf.run(func(ctx context.Context, cp *client.ControlPlane, cmd *cobra.Command, args []string) error {
			for _, name := range args {
				if err := cp.DeleteSecret(ctx, name); err != nil {
					return err
				}
				fmt.Fprintln(cmd.OutOrStdout(), name)
			}
			return nil
		}),
	}
	cf.register(cmd, false)
	return cmd
}
