//go:build !slim

package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/corral-sh/corral/api/cpapi"
	"github.com/corral-sh/corral/client"
)

// runFlags are the flags of `corral run`.
type runFlags struct {
	cf                          cpFlags
	spec                        specFlags
	agent, model, command, repo string
	repoSecret                  string
	labels, secrets             []string
	follow                      bool
}

func runJobCmd() *cobra.Command {
	var rf runFlags
	cf := &rf.cf
	cmd := &cobra.Command{
		Use:   "run [flags] [task words...]",
		Short: "Submit a job: an agent works on a task in a fresh sandbox",
		Long: `run submits a job to the control plane and prints its id. With --follow it
streams the job as it runs (state changes, the command's output verbatim,
messages and tool calls) and exits with the job's result: 0 when it
completed, the command's exit code when it failed with one, 1 otherwise.
ctrl-C detaches (exit 130) and leaves the job running; 'corral logs -f <id>'
follows it again.

  corral run --cmd 'npm test' --follow
  corral run --agent claude-code --repo https://github.com/me/app@main --repo-secret GITHUB_TOKEN "fix the failing test"
  corral run --model anthropic/claude-sonnet-4-5 --follow "write a CLI that prints primes"

--cmd runs a shell command (the script agent); the task then defaults to
the command.`,
		RunE: cf.run(func(ctx context.Context, cp *client.ControlPlane, cmd *cobra.Command, args []string) error {
			req, err := rf.request(args)
			if err != nil {
				return err
			}
			j, err := cp.CreateJob(ctx, req)
			if err != nil {
				return err
			}
			out, errOut := cmd.OutOrStdout(), cmd.ErrOrStderr()
			if !rf.follow {
				if cf.json {
					return printJSON(out, j)
				}
				_, err := fmt.Fprintln(out, j.ID)
				return err
			}
			if !cf.json {
				fmt.Fprintln(errOut, paint(colorOK(errOut), styleDim, "job "+j.ID))
			}
			return followJob(ctx, cp, j.ID, newEventView(out, errOut, errOut, cf.json))
		}),
	}
	cf.register(cmd, true)
	rf.spec.register(cmd, "stop the job after this long (default: the server's)")
	f := cmd.Flags()
	f.StringVar(&rf.agent, "agent", "", "agent: script, builtin, claude-code, codex, opencode, gemini (default builtin; script with --cmd)")
	f.StringVar(&rf.model, "model", "", "model of the agent: openai/<name> or anthropic/<name>")
	f.StringVar(&rf.command, "cmd", "", "shell command to run (the script agent)")
	f.StringVar(&rf.repo, "repo", "", "repository to work on: URL[@ref]; the job's branch is pushed and a pull request opened")
	f.StringVar(&rf.repoSecret, "repo-secret", "", "tenant secret holding the repository's token (see corral secret set)")
	f.StringArrayVar(&rf.secrets, "secret", nil, "tenant secret NAME given to the job's processes as $NAME (repeatable)")
	f.StringArrayVarP(&rf.labels, "label", "l", nil, "label KEY=VALUE (repeatable)")
	f.BoolVarP(&rf.follow, "follow", "f", false, "stream the job until it ends and exit with its result")
	return cmd
}

// request builds the job the flags and the task words describe.
func (f *runFlags) request(words []string) (cpapi.JobRequest, error) {
	spec := &f.spec
	req := cpapi.JobRequest{
		Task: strings.Join(words, " "), Agent: f.agent, Model: f.model, Command: f.command,
		Runtime: spec.runtime, Template: spec.template, Network: spec.network, TimeoutS: spec.timeoutS(),
	}
	if req.Agent == "" && f.command != "" {
		req.Agent = cpapi.AgentScript
	}
	if req.Task == "" {
		req.Task = f.command
	}
	if req.Task == "" {
		return req, errors.New("a task is required: corral run [flags] <task words...> (or --cmd)")
	}
	var err error
	if req.Resources, err = spec.resources(); err != nil {
		return req, err
	}
	if req.Env, err = parseKV("env", spec.env); err != nil {
		return req, err
	}
	if req.Labels, err = parseKV("label", f.labels); err != nil {
		return req, err
	}
	if f.repo != "" {
		u, ref := splitRepo(f.repo)
		req.Repo = &cpapi.Repo{URL: u, Ref: ref, Secret: f.repoSecret}
	} else if f.repoSecret != "" {
		return req, errors.New("--repo-secret needs --repo")
	}
	req.Secrets = f.secrets
	return req, nil
}

// splitRepo splits "URL@ref" at an @ inside the URL's path, so the user
// part of "git@host:org/repo.git" or "https://user@host/repo" stays.
func splitRepo(s string) (repoURL, ref string) {
	at := strings.LastIndex(s, "@")
	if at < 0 {
		return s, ""
	}
	path := 0 // where the path starts: a local path has no host part
	if i := strings.Index(s, "://"); i >= 0 {
		j := strings.Index(s[i+3:], "/")
		if j < 0 {
			return s, ""
		}
		path = i + 3 + j
	} else if i := strings.Index(s, ":"); i >= 0 {
		path = i // scp-like user@host:path
	}
	if at > path {
		return s[:at], s[at+1:]
	}
	return s, ""
}
