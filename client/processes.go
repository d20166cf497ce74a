package client

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"unicode/utf8"

	"github.com/corral-sh/corral/api/sandboxapi"
)

// Spawn starts a process (POST /v1/processes).
func (c *Client) Spawn(ctx context.Context, req sandboxapi.SpawnRequest) (*sandboxapi.Process, error) {
	var p sandboxapi.Process
	if err := c.call(ctx, http.MethodPost, "/processes", nil, req, &p); err != nil {
		return nil, err
	}
	return &p, nil
}

// ListOptions filter ListProcesses. Zero values do not filter.
type ListOptions struct {
	Status string // sandboxapi.StatusRunning or sandboxapi.StatusExited
	Tag    string
	PTY    *bool
}

// ListProcesses lists the daemon's processes (GET /v1/processes).
func (c *Client) ListProcesses(ctx context.Context, opts ListOptions) ([]sandboxapi.Process, error) {
	q := url.Values{}
	if opts.Status != "" {
		q.Set("status", opts.Status)
	}
	if opts.Tag != "" {
		q.Set("tag", opts.Tag)
	}
	if opts.PTY != nil {
		q.Set("pty", strconv.FormatBool(*opts.PTY))
	}
	var list sandboxapi.ProcessList
	if err := c.call(ctx, http.MethodGet, "/processes", q, nil, &list); err != nil {
		return nil, err
	}
	return list.Processes, nil
}

// GetProcess returns one process; ref is its id or its tag.
func (c *Client) GetProcess(ctx context.Context, ref string) (*sandboxapi.Process, error) {
	var p sandboxapi.Process
	if err := c.call(ctx, http.MethodGet, processPath(ref, ""), nil, nil, &p); err != nil {
		return nil, err
	}
	return &p, nil
}

// DeleteProcess stops a process (SIGTERM to its group, SIGKILL after the
// daemon's grace period) and forgets it.
func (c *Client) DeleteProcess(ctx context.Context, ref string) error {
	return c.call(ctx, http.MethodDelete, processPath(ref, ""), nil, nil, nil)
}

// Signal sends a signal, by name ("SIGINT", "INT") or number ("2"). It
// fails with ErrConflict when the process has exited.
func (c *Client) Signal(ctx context.Context, ref, sig string) error {
	return c.call(ctx, http.MethodPost, processPath(ref, "/signal"), nil, sandboxapi.SignalRequest{Signal: sig}, nil)
}

// Resize sets the terminal size of a PTY process; ErrConflict if it has no
// PTY.
func (c *Client) Resize(ctx context.Context, ref string, rows, cols int) error {
	if err := sandboxapi.ValidSize(rows, cols); err != nil {
		return fmt.Errorf("client: resize %q: %w: %w", ref, ErrInvalid, err)
	}
	return c.call(ctx, http.MethodPost, processPath(ref, "/resize"), nil, sandboxapi.PTYSize{Rows: rows, Cols: cols}, nil)
}

// WriteInput writes data to the process's stdin or terminal. Bytes that are
// not valid UTF-8 travel base64-encoded, so any data round-trips. It fails
// with ErrConflict when the process has no stdin.
func (c *Client) WriteInput(ctx context.Context, ref string, data []byte) error {
	return c.call(ctx, http.MethodPost, processPath(ref, "/input"), nil, inputRequest(data), nil)
}

func inputRequest(data []byte) sandboxapi.InputRequest {
	if utf8.Valid(data) {
		s := string(data)
		return sandboxapi.InputRequest{Data: &s}
	}
	s := base64.StdEncoding.EncodeToString(data)
	return sandboxapi.InputRequest{DataBase64: &s}
}

// CloseStdin closes the process's stdin.
func (c *Client) CloseStdin(ctx context.Context, ref string) error {
	return c.call(ctx, http.MethodPost, processPath(ref, "/close-stdin"), nil, nil, nil)
}

// OutputOptions select what ReadOutput returns.
type OutputOptions struct {
	// Offset is the first byte wanted. Output older than the daemon's
	// window is gone; the answer then starts later and says Truncated.
	Offset int64
	// WaitMS, when positive, long-polls: with no output at Offset yet, the
	// daemon waits up to this long for some.
	WaitMS int
	// Limit, when positive, caps the bytes returned (the daemon's default
	// is 1 MiB).
	Limit int64
	// Stream, when set, returns only "stdout" or "stderr"; the offsets
	// still count both.
	Stream string
}

// Output is a slice of a process's output log.
type Output struct {
	Data []byte
	// Offset is the offset of Data[0]: the requested one, or a later one
	// when the requested bytes had left the window (Truncated).
	Offset int64
	// NextOffset is the offset to ask for next.
	NextOffset int64
	Truncated  bool
	// Status is the process's status when the answer was made, if the
	// daemon said (sandboxapi.StatusRunning or StatusExited): an empty
	// answer from an exited process means the output is complete.
	Status string
}

// ReadOutput reads retained output from opts.Offset (GET
// /v1/processes/{ref}/output).
func (c *Client) ReadOutput(ctx context.Context, ref string, opts OutputOptions) (*Output, error) {
	q := url.Values{"offset": {strconv.FormatInt(opts.Offset, 10)}}
	if opts.WaitMS > 0 {
		q.Set("wait_ms", strconv.Itoa(opts.WaitMS))
	}
	if opts.Limit > 0 {
		q.Set("limit", strconv.FormatInt(opts.Limit, 10))
	}
	if opts.Stream != "" {
		q.Set("stream", opts.Stream)
	}
	req, err := c.newRequest(ctx, http.MethodGet, c.endpoint(processPath(ref, "/output"), q), nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("client: read output of %q: %w", ref, err)
	}
	out := &Output{Data: data, Status: resp.Header.Get(sandboxapi.HeaderProcessStatus)}
	if out.Offset, err = headerInt(resp.Header, sandboxapi.HeaderOffset, opts.Offset); err != nil {
		return nil, fmt.Errorf("client: read output of %q: %w", ref, err)
	}
	if out.NextOffset, err = headerInt(resp.Header, sandboxapi.HeaderNextOffset, out.Offset+int64(len(data))); err != nil {
		return nil, fmt.Errorf("client: read output of %q: %w", ref, err)
	}
	if v := resp.Header.Get(sandboxapi.HeaderTruncated); v != "" {
		out.Truncated, _ = strconv.ParseBool(v)
	}
	return out, nil
}

// headerInt parses an integer header, def when it is absent.
func headerInt(h http.Header, name string, def int64) (int64, error) {
	v := h.Get(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("header %s: %w", name, err)
	}
	return n, nil
}
