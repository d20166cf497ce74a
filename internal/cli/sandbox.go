//go:build !slim

package cli

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/corral-sh/corral/api/cpapi"
	"github.com/corral-sh/corral/api/sandboxapi"
	"github.com/corral-sh/corral/client"
)

func sandboxCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:     "sandbox",
		Aliases: []string{"sandboxes", "sb"},
		Short:   "Create sandboxes, run commands in them, copy files in and out",
	}
	cmd.AddCommand(sandboxCreateCmd(), sandboxLsCmd(), sandboxRmCmd(), sandboxExecCmd(), sandboxCpCmd())
	return cmd
}

func sandboxCreateCmd() *cobra.Command {
	var (
		cf     cpFlags
		spec   specFlags
		labels []string
	)
	cmd := &cobra.Command{
		Use:   "create",
		Short: "Create a sandbox and print its id",
		Args:  cobra.NoArgs,
		RunE: cf.run(func(ctx context.Context, cp *client.ControlPlane, cmd *cobra.Command, _ []string) error {
			req := cpapi.SandboxRequest{Template: spec.template, Runtime: spec.runtime, Network: spec.network, TimeoutS: spec.timeoutS()}
			var err error
			if req.Resources, err = spec.resources(); err != nil {
				return err
			}
			if req.Env, err = parseKV("env", spec.env); err != nil {
				return err
			}
			if req.Labels, err = parseKV("label", labels); err != nil {
				return err
			}
			spin := newSpinner(cmd.ErrOrStderr())
			spin.Start("creating a sandbox")
			sb, err := cp.CreateSandbox(ctx, req)
			spin.Stop()
			if err != nil {
				return err
			}
			if cf.json {
				return printJSON(cmd.OutOrStdout(), sb)
			}
			_, err = fmt.Fprintln(cmd.OutOrStdout(), sb.ID)
			return err
		}),
	}
	cf.register(cmd, true)
	spec.register(cmd, "delete the sandbox after this long idle (default: the server's, 15m)")
	cmd.Flags().StringArrayVarP(&labels, "label", "l", nil, "label KEY=VALUE (repeatable)")
	return cmd
}

func sandboxLsCmd() *cobra.Command {
	var cf cpFlags
	cmd := &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   "List sandboxes",
		Args:    cobra.NoArgs,
		RunE: cf.run(func(ctx context.Context, cp *client.ControlPlane, cmd *cobra.Command, _ []string) error {
			list, err := cp.ListSandboxes(ctx)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if cf.json {
				return printJSON(out, cpapi.SandboxList{Sandboxes: list})
			}
			color := colorOK(out)
			tw := newTable(out)
			fmt.Fprintln(tw, "ID\tSTATUS\tRUNTIME\tTEMPLATE\tAGE\tEXPIRES")
			for _, sb := range list {
				expires := "-"
				if sb.ExpiresAt != nil {
					expires = "in " + shortDuration(time.Until(*sb.ExpiresAt))
				}
				st := paint(color, statusStyle(sb.Status), fmt.Sprintf("%-8s", sb.Status))
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", sb.ID, st, sb.Runtime, sb.Template, age(sb.CreatedAt), expires)
			}
			return tw.Flush()
		}),
	}
	cf.register(cmd, true)
	return cmd
}

func sandboxRmCmd() *cobra.Command {
	var cf cpFlags
	cmd := &cobra.Command{
		Use:     "rm <id>...",
		Aliases: []string{"delete"},
		Short:   "Delete sandboxes and everything running in them",
		Args:    cobra.MinimumNArgs(1),
		RunE: cf.run(func(ctx context.Context, cp *client.ControlPlane, cmd *cobra.Command, args []string) error {
			for _, id := range args {
				if err := cp.DeleteSandbox(ctx, id); err != nil {
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

func sandboxExecCmd() *cobra.Command {
	var (
		cf cpFlags
		ef execFlags
	)
	cmd := &cobra.Command{
		Use:   "exec [flags] <sandbox> [--] command [args...]",
		Short: "Run a command in a sandbox, printing its output live, and exit with its code",
		Long: `exec runs one command to completion in a sandbox, streams its stdout and
stderr here as they are written, and exits with its exit code (128+n when
a signal n killed it, 124 when it timed out). Flags go before the sandbox.

  corral sandbox exec sb_123 -- ls -la /workspace
  corral sandbox exec --shell sb_123 'echo $HOME && uname -a'`,
		Args: cobra.MinimumNArgs(2),
		RunE: cf.run(func(ctx context.Context, cp *client.ControlPlane, cmd *cobra.Command, args []string) error {
			id, command := args[0], args[1:]
			if command[0] == "--" {
				command = command[1:]
			}
			if len(command) == 0 {
				return fmt.Errorf("no command to run in %s", id)
			}
			return ef.run(cmd, cp.Sandbox(id), command)
		}),
	}
	cf.register(cmd, false)
	ef.register(cmd)
	return cmd
}

func shellCmd() *cobra.Command {
	var (
		cf         cpFlags
		command    string
		detachKeys string
	)
	cmd := &cobra.Command{
		Use:   "shell <sandbox>",
		Short: "Open an interactive shell in a sandbox",
		Long: `shell starts a shell on a new terminal (PTY) in the sandbox and attaches
this terminal to it: raw mode, window size following this one. It exits
with the shell's exit code. The detach keys (default ctrl-p,ctrl-q) leave
the shell running.`,
		Args: cobra.ExactArgs(1),
		RunE: cf.run(func(ctx context.Context, cp *client.ControlPlane, cmd *cobra.Command, args []string) error {
			keys, err := parseDetachKeys(detachKeys)
			if err != nil {
				return err
			}
			argv := strings.Fields(command)
			if len(argv) == 0 {
				return fmt.Errorf("--cmd is empty")
			}
			rows, cols := 24, 80
			if fd, ok := terminalFD(cmd.InOrStdin(), cmd.OutOrStdout()); ok {
				if w, h, err := term.GetSize(fd); err == nil && w > 0 && h > 0 {
					rows, cols = h, w
				}
			}
			termName := os.Getenv("TERM")
			if termName == "" {
				termName = "xterm-256color"
			}
			c := cp.Sandbox(args[0])
			p, err := c.Spawn(ctx, sandboxapi.SpawnRequest{
				Command: argv[0], Args: argv[1:],
				Env:   map[string]string{"TERM": termName},
				PTY:   &sandboxapi.PTYSize{Rows: rows, Cols: cols},
				Label: "corral shell",
			})
			if err != nil {
				return err
			}
			err = attach(ctx, c, p.ID, attachOptions{
				detachKeys: keys,
				replay:     true,
				stdin:      cmd.InOrStdin(),
				stdout:     cmd.OutOrStdout(),
				stderr:     cmd.ErrOrStderr(),
				detachHint: fmt.Sprintf("the shell keeps running as process %s; attach again with:\n  corral attach --url %s/v1/sandboxes/%s --token <token> %s",
					p.ID, cp.URL(), args[0], p.ID),
			})
			// Forget an exited shell (not a detached one), even after ctrl-C.
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			if q, gerr := c.GetProcess(cctx, p.ID); gerr == nil && q.Status == sandboxapi.StatusExited {
				_ = c.DeleteProcess(cctx, p.ID)
			}
			return err
		}),
	}
	cf.register(cmd, false)
	cmd.Flags().StringVar(&command, "cmd", "bash", "the shell (a command line, split on spaces)")
	cmd.Flags().StringVar(&detachKeys, "detach-keys", defaultDetachKeys, `key sequence that detaches: comma-separated "ctrl-<key>" or single characters`)
	return cmd
}
