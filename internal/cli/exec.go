package cli

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/corral-sh/corral/api/sandboxapi"
	"github.com/corral-sh/corral/client"
)

func execCmd() *cobra.Command {
	var (
		sf sandboxFlags
		ef execFlags
	)
	cmd := &cobra.Command{
		Use:   "exec [flags] [--] command [args...]",
		Short: "Run a command in a sandbox, printing its output live",
		Long: `exec runs one command to completion in a sandbox (POST /v1/exec), streams its
stdout and stderr here as they are written, and exits with its exit code
(128+n when a signal n killed it, 124 when it timed out).

  corral exec --url http://127.0.0.1:8080 -- ls -la /workspace
  corral exec --shell 'echo $HOME && uname -a'`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := sf.client()
			if err != nil {
				return err
			}
			return ef.run(cmd, c, args)
		},
	}
	sf.register(cmd)
	ef.register(cmd)
	return cmd
}

// execFlags are the flags of a one-shot command, shared by `corral exec`
// (a daemon reached directly) and `corral sandbox exec` (through the
// control plane).
type execFlags struct {
	shell       bool
	cwd         string
	env         []string
	timeout     time.Duration
	interactive bool
}

// register adds the flags; flags after the command are the command's.
func (ef *execFlags) register(cmd *cobra.Command) {
	f := cmd.Flags()
	f.SetInterspersed(false)
	f.BoolVar(&ef.shell, "shell", false, "run the arguments as one /bin/sh -c command line")
	f.StringVar(&ef.cwd, "cwd", "", "working directory in the sandbox")
	f.StringArrayVarP(&ef.env, "env", "e", nil, "environment variable KEY=VALUE (repeatable)")
	f.DurationVar(&ef.timeout, "timeout", 0, "kill the command after this long (default: the daemon's, 60s)")
	f.BoolVarP(&ef.interactive, "interactive", "i", false, "send this command's stdin (read to its end first)")
}

// run runs args in c's sandbox, streaming its output to cmd's, and
// returns its end as an exit status.
func (ef *execFlags) run(cmd *cobra.Command, c *client.Client, args []string) error {
	req := sandboxapi.ExecRequest{Command: args[0], Args: args[1:], Cwd: ef.cwd, TimeoutMS: ef.timeout.Milliseconds()}
	if ef.shell {
		req.Command, req.Args, req.Shell = strings.Join(args, " "), nil, true
	}
	var err error
	if req.Env, err = parseKV("env", ef.env); err != nil {
		return err
	}
	if ef.interactive {
		in, err := io.ReadAll(cmd.InOrStdin())
		if err != nil {
			return fmt.Errorf("read stdin: %w", err)
		}
		s := string(in)
		req.Stdin = &s
	}
	stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
	var werr error
	res, err := c.ExecStream(cmd.Context(), req, func(stream string, data []byte) {
		w := stdout
		if stream == sandboxapi.ExecEventStderr {
			w = stderr
		}
		if _, err := w.Write(data); err != nil && werr == nil {
			werr = fmt.Errorf("write output: %w", err)
		}
	})
	if err != nil {
		return err
	}
	if werr != nil {
		return werr
	}
	if res.StdoutTruncated || res.StderrTruncated {
		fmt.Fprintln(stderr, "corral: output over the limit was dropped")
	}
	if res.TimedOut {
		fmt.Fprintf(stderr, "corral: timed out after %d ms\n", res.DurationMS)
		return &ExitError{Code: 124}
	}
	return exitStatus(res.ExitCode, res.Signal)
}
