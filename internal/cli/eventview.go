//go:build !slim

package cli

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/corral-sh/corral/api/cpapi"
	"github.com/corral-sh/corral/client"
)

// eventView prints a job's events for people: process output verbatim
// (stdout and stderr apart), and one line per state change, message, tool
// call, result and error on notes; or, with json, each event as one line
// of JSON on stdout.
type eventView struct {
	stdout, stderr io.Writer
	notes          io.Writer
	color          bool // colour the notes
	json           bool
	spin           *spinner // on notes, while the job waits for a sandbox
}

func newEventView(stdout, stderr, notes io.Writer, asJSON bool) *eventView {
	return &eventView{stdout: stdout, stderr: stderr, notes: notes, color: colorOK(notes), json: asJSON, spin: newSpinner(notes)}
}

// show prints one event.
func (v *eventView) show(e cpapi.Event) error {
	if v.json {
		b, err := json.Marshal(e)
		if err != nil {
			return fmt.Errorf("encode event %d: %w", e.Seq, err)
		}
		_, err = fmt.Fprintf(v.stdout, "%s\n", b)
		return err
	}
	v.spin.Stop()
	switch e.Type {
	case cpapi.EventProcessOutput:
		var d cpapi.OutputData
		if err := json.Unmarshal(e.Data, &d); err != nil {
			return v.note(styleRed, "bad process.output event %d: %v", e.Seq, err)
		}
		data := []byte(d.Data)
		if d.DataBase64 != "" {
			var err error
			if data, err = base64.StdEncoding.DecodeString(d.DataBase64); err != nil {
				return v.note(styleRed, "bad process.output event %d: %v", e.Seq, err)
			}
		}
		w := v.stdout
		if d.Stream == "stderr" {
			w = v.stderr
		}
		_, err := w.Write(data)
		return err
	case cpapi.EventJobState:
		var d cpapi.StateData
		_ = json.Unmarshal(e.Data, &d)
		line := d.To
		if d.Reason != "" {
			line += " (" + d.Reason + ")"
		}
		if err := v.note(statusStyle(d.To), "▸ %s", line); err != nil {
			return err
		}
		if d.To == cpapi.JobPending || d.To == cpapi.JobCreating {
			v.spin.Start("waiting for the job to start")
		}
		return nil
	case cpapi.EventMessage:
		var d cpapi.MessageData
		_ = json.Unmarshal(e.Data, &d)
		return v.note(styleBold, "%s: %s", d.Role, strings.TrimRight(d.Text, "\n"))
	case cpapi.EventAgentThought:
		return v.note(styleDim, "… %s", oneLine(field(e.Data, "text"), 160))
	case cpapi.EventToolCall:
		var d struct {
			Tool  string          `json:"tool"`
			Input json.RawMessage `json:"input"`
		}
		_ = json.Unmarshal(e.Data, &d)
		return v.note(styleCyan, "→ %s %s", d.Tool, oneLine(string(d.Input), 160))
	case cpapi.EventToolResult:
		var d struct {
			Output   string `json:"output"`
			ExitCode *int   `json:"exit_code"`
			IsError  bool   `json:"is_error"`
		}
		_ = json.Unmarshal(e.Data, &d)
		style, status := styleDim, "ok"
		if d.ExitCode != nil {
			status = fmt.Sprintf("exit %d", *d.ExitCode)
		}
		if d.IsError {
			style, status = styleRed, "error"
		}
		return v.note(style, "← %s %s", status, oneLine(d.Output, 140))
	case cpapi.EventError:
		return v.note(styleRed, "error: %s", field(e.Data, "message"))
	case cpapi.EventCondensed:
		var d cpapi.CondensedData
		_ = json.Unmarshal(e.Data, &d)
		return v.note(styleDim, "▸ context condensed: %d messages summarised (~%d → ~%d tokens)", d.Dropped, d.TokensBefore, d.TokensAfter)
	case cpapi.EventArtifact:
		var d struct {
			Name string `json:"name"`
			Size int64  `json:"size"`
		}
		_ = json.Unmarshal(e.Data, &d)
		return v.note(styleDim, "▸ artifact %s (%s)", d.Name, byteSize(d.Size))
	}
	return nil // raw and unknown types: only the JSON view shows them
}

// note prints one line on notes.
func (v *eventView) note(style, format string, args ...any) error {
	_, err := fmt.Fprintln(v.notes, paint(v.color, style, fmt.Sprintf(format, args...)))
	return err
}

// field is a string field of a JSON object, "" if absent.
func field(data json.RawMessage, name string) string {
	var m map[string]any
	_ = json.Unmarshal(data, &m)
	s, _ := m[name].(string)
	return s
}

// followJob prints job id's events from the start until it ends, and
// returns its result as an exit status (see jobExit). The stream
// survives network blips (the SDK resumes it). If ctx ends first (ctrl-C)
// it detaches, says how to follow again, and returns exit status 130.
func followJob(ctx context.Context, cp *client.ControlPlane, id string, v *eventView) error {
	defer v.spin.Stop()
	st, err := cp.JobEvents(ctx, id, 0)
	if err != nil {
		return err
	}
	defer st.Close()
	for {
		e, err := st.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			if ctx.Err() != nil {
				v.spin.Stop()
				fmt.Fprintf(v.stderr, "\ndetached; job %s keeps running. Follow it again with: corral logs -f %s\n", id, id)
				return &ExitError{Code: 130}
			}
			return err
		}
		if err := v.show(e); err != nil {
			return fmt.Errorf("write output: %w", err)
		}
	}
	j, err := cp.GetJob(ctx, id)
	if err != nil {
		return err
	}
	return jobExit(j)
}

// jobExit is a finished job as an exit status: nil when it completed,
// the command's exit code when it failed with one, 1 otherwise.
func jobExit(j *cpapi.Job) error {
	switch {
	case j.Status == cpapi.JobCompleted:
		return nil
	case j.Status == cpapi.JobFailed && j.Result != nil && j.Result.ExitCode != nil &&
		*j.Result.ExitCode > 0 && *j.Result.ExitCode < 256:
		return &ExitError{Code: *j.Result.ExitCode}
	}
	return &ExitError{Code: 1}
}
