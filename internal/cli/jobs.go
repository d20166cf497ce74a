//go:build !slim

package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/corral-sh/corral/api/cpapi"
	"github.com/corral-sh/corral/client"
)

func jobsCmd() *cobra.Command {
	var (
		cf     cpFlags
		status string
		limit  int
	)
	cmd := &cobra.Command{
		Use:   "jobs",
		Short: "List jobs, newest first",
		Args:  cobra.NoArgs,
		RunE: cf.run(func(ctx context.Context, cp *client.ControlPlane, cmd *cobra.Command, _ []string) error {
			list, err := cp.ListJobs(ctx, client.ListJobsOptions{Status: status, Limit: limit})
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if cf.json {
				return printJSON(out, list)
			}
			color := colorOK(out)
			tw := newTable(out)
			fmt.Fprintln(tw, "ID\tSTATUS\tAGENT\tAGE\tTASK")
			for _, j := range list.Jobs {
				// Pad before painting: tabwriter counts the escape codes.
				st := paint(color, statusStyle(j.Status), fmt.Sprintf("%-10s", j.Status))
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", j.ID, st, j.Agent, age(j.CreatedAt), oneLine(j.Task, 50))
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			if list.Next != "" && isTerminal(out) {
				fmt.Fprintln(cmd.ErrOrStderr(), paint(color, styleDim, "(more: raise --limit)"))
			}
			return nil
		}),
	}
	cf.register(cmd, true)
	cmd.Flags().StringVar(&status, "status", "", "only jobs in these states (comma-separated): pending, running, completed, failed, ...")
	cmd.Flags().IntVarP(&limit, "limit", "n", 20, "at most this many jobs")
	return cmd
}

func statusCmd() *cobra.Command {
	var cf cpFlags
	cmd := &cobra.Command{
		Use:   "status <job>",
		Short: "Show a job's details",
		Args:  cobra.ExactArgs(1),
		RunE: cf.run(func(ctx context.Context, cp *client.ControlPlane, cmd *cobra.Command, args []string) error {
			j, err := cp.GetJob(ctx, args[0])
			if err != nil {
				return err
			}
			if cf.json {
				return printJSON(cmd.OutOrStdout(), j)
			}
			return printJob(cmd.OutOrStdout(), j)
		}),
	}
	cf.register(cmd, true)
	return cmd
}

// printJob shows a job as aligned "Field: value" lines.
func printJob(w io.Writer, j *cpapi.Job) error {
	color := colorOK(w)
	tw := newTable(w)
	row := func(k, v string) {
		if v != "" {
			fmt.Fprintf(tw, "%s:\t%s\n", k, v)
		}
	}
	when := func(t *time.Time) string {
		if t == nil {
			return ""
		}
		return fmt.Sprintf("%s (%s ago)", t.Local().Format(time.DateTime), age(*t))
	}
	status := j.Status
	if j.StatusReason != "" {
		status += " (" + j.StatusReason + ")"
	}
	row("ID", j.ID)
	row("Status", paint(color, statusStyle(j.Status), status))
	row("Agent", j.Agent)
	row("Task", oneLine(j.Task, 200))
	row("Runtime", j.Runtime)
	row("Sandbox", j.SandboxID)
	row("Created", when(&j.CreatedAt))
	row("Started", when(j.StartedAt))
	row("Finished", when(j.FinishedAt))
	if j.StartedAt != nil {
		end := time.Now()
		if j.FinishedAt != nil {
			end = *j.FinishedAt
		}
		row("Duration", end.Sub(*j.StartedAt).Round(time.Millisecond).String())
	}
	if r := j.Result; r != nil {
		if r.ExitCode != nil {
			row("Exit code", fmt.Sprint(*r.ExitCode))
		}
		row("Branch", r.Branch)
		row("Pull request", r.PRURL)
	}
	var labels []string
	for _, k := range slices.Sorted(maps.Keys(j.Labels)) {
		labels = append(labels, k+"="+j.Labels[k])
	}
	row("Labels", strings.Join(labels, ", "))
	if err := tw.Flush(); err != nil {
		return err
	}
	if j.Result != nil && strings.TrimSpace(j.Result.Summary) != "" {
		_, err := fmt.Fprintf(w, "Summary:\n%s\n", strings.TrimRight(j.Result.Summary, "\n"))
		return err
	}
	return nil
}

func logsCmd() *cobra.Command {
	var (
		cf     cpFlags
		follow bool
	)
	cmd := &cobra.Command{
		Use:   "logs [-f] <job>",
		Short: "Print a job's log: its output, state changes, messages and tool calls",
		Long: `logs prints everything a job has logged so far. With -f it keeps following
until the job ends, resuming by itself after a network blip, and exits
with the job's result like 'corral run --follow'. --json prints each event
as one line of JSON.`,
		Args: cobra.ExactArgs(1),
		RunE: cf.run(func(ctx context.Context, cp *client.ControlPlane, cmd *cobra.Command, args []string) error {
			out := cmd.OutOrStdout()
			v := newEventView(out, cmd.ErrOrStderr(), out, cf.json)
			if follow {
				return followJob(ctx, cp, args[0], v)
			}
			for after := int64(0); ; {
				page, err := cp.EventsPage(ctx, args[0], after, 1000)
				if err != nil {
					return err
				}
				for _, e := range page.Events {
					if err := v.show(e); err != nil {
						return fmt.Errorf("write output: %w", err)
					}
				}
				if len(page.Events) == 0 || page.NextAfter <= after {
					return nil
				}
				after = page.NextAfter
			}
		}),
	}
	cf.register(cmd, true)
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "follow the log until the job ends")
	return cmd
}

func cancelCmd() *cobra.Command {
	var cf cpFlags
	cmd := &cobra.Command{
		Use:   "cancel <job>...",
		Short: "Cancel jobs; their sandboxes are removed",
		Args:  cobra.MinimumNArgs(1),
		RunE: cf.run(func(ctx context.Context, cp *client.ControlPlane, cmd *cobra.Command, args []string) error {
			var cancelled []*cpapi.Job
			for _, id := range args {
				j, err := cp.CancelJob(ctx, id)
				if err != nil {
					return err
				}
				cancelled = append(cancelled, j)
				if !cf.json {
					fmt.Fprintln(cmd.OutOrStdout(), j.ID)
				}
			}
			if cf.json {
				return printJSON(cmd.OutOrStdout(), cancelled)
			}
			return nil
		}),
	}
	cf.register(cmd, true)
	return cmd
}

func sendCmd() *cobra.Command {
	var cf cpFlags
	cmd := &cobra.Command{
		Use:   "send <job> <text...>",
		Short: "Send a message to a job's agent while it runs",
		Args:  cobra.MinimumNArgs(2),
		RunE: cf.run(func(ctx context.Context, cp *client.ControlPlane, cmd *cobra.Command, args []string) error {
			err := cp.SendMessage(ctx, args[0], strings.Join(args[1:], " "))
			if ae := (*client.APIError)(nil); errors.As(err, &ae) && ae.Detail != "" && errors.Is(err, client.ErrConflict) {
				return &humanError{msg: fmt.Sprintf("cannot send to job %s: %s", args[0], ae.Detail), err: err}
			}
			return err
		}),
	}
	cf.register(cmd, false)
	return cmd
}

func artifactsCmd() *cobra.Command {
	var (
		cf  cpFlags
		out string
	)
	cmd := &cobra.Command{
		Use:   "artifacts <job> [-o file.zip]",
		Short: "Download a job's artifacts: its workspace, changes.patch and events.jsonl, as a zip",
		Args:  cobra.ExactArgs(1),
		RunE: cf.run(func(ctx context.Context, cp *client.ControlPlane, cmd *cobra.Command, args []string) error {
			if out == "" {
				out = args[0] + ".zip"
			}
			body, err := cp.Artifacts(ctx, args[0])
			if err != nil {
				return err
			}
			defer body.Close()
			if out == "-" {
				if _, err := io.Copy(cmd.OutOrStdout(), body); err != nil {
					return fmt.Errorf("download artifacts: %w", err)
				}
				return nil
			}
			return download(body, out, cmd.ErrOrStderr())
		}),
	}
	cf.register(cmd, false)
	cmd.Flags().StringVarP(&out, "output", "o", "", `file to write ("-" for stdout) (default <job>.zip)`)
	return cmd
}

// download copies body to the file path, showing progress on a terminal
// progress; the file appears whole or not at all.
func download(body io.Reader, path string, progress io.Writer) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.part")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after the rename, a no-op
	var w io.Writer = tmp
	var pw *progressWriter
	if isTerminal(progress) {
		total := int64(-1)
		if s, ok := body.(interface{ Size() int64 }); ok {
			total = s.Size()
		}
		pw = &progressWriter{w: progress, label: "downloading " + filepath.Base(path), total: total}
		w = io.MultiWriter(tmp, pw)
	}
	_, err = io.Copy(w, body)
	if pw != nil {
		pw.Done()
	}
	if err != nil {
		tmp.Close()
		return fmt.Errorf("download %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("download %s: %w", path, err)
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
