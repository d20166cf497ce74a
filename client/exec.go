package client

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/corral-sh/corral/api/sandboxapi"
)

// Exec runs a command to completion (POST /v1/exec) and returns its exit
// status and output. A command that timed out is not an error: the result
// says TimedOut and holds the partial output.
func (c *Client) Exec(ctx context.Context, req sandboxapi.ExecRequest) (*sandboxapi.ExecResult, error) {
	var res sandboxapi.ExecResult
	if err := c.call(ctx, http.MethodPost, "/exec", nil, req, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

// ExecStream runs a command like Exec, but streams its output: onChunk
// (which may be nil) gets each piece of stdout or stderr as it is written,
// stream being sandboxapi.ExecEventStdout or ExecEventStderr. The returned
// result has the exit status; its Stdout and Stderr are empty, since the
// output went to onChunk. onChunk runs on the caller's goroutine and must
// not keep data after it returns.
func (c *Client) ExecStream(ctx context.Context, req sandboxapi.ExecRequest, onChunk func(stream string, data []byte)) (*sandboxapi.ExecResult, error) {
	b, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("client: exec: encode request: %w", err)
	}
	hreq, err := c.newRequest(ctx, http.MethodPost, c.endpoint("/exec", nil), bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	hreq.Header.Set("Content-Type", "application/json")
	resp, err := c.doSSE(hreq, "")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	r := newSSEReader(resp.Body)
	for {
		ev, err := r.next()
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("client: exec: stream ended without an exit event: %w", io.ErrUnexpectedEOF)
		}
		if err != nil {
			return nil, fmt.Errorf("client: exec: %w", err)
		}
		switch ev.Event {
		case sandboxapi.ExecEventStdout, sandboxapi.ExecEventStderr:
			data, err := decodeChunk(ev.Data)
			if err != nil {
				return nil, fmt.Errorf("client: exec: %s event: %w", ev.Event, err)
			}
			if onChunk != nil && len(data) > 0 {
				onChunk(ev.Event, data)
			}
		case sandboxapi.ExecEventError: // the command could not run after all
			return nil, execError(hreq.URL.Path, ev.Data)
		case sandboxapi.ExecEventExit:
			var res sandboxapi.ExecResult
			if err := json.Unmarshal(ev.Data, &res); err != nil {
				return nil, fmt.Errorf("client: exec: exit event: %w", err)
			}
			return &res, nil
		}
	}
}

func execError(path string, data []byte) error {
	var p struct {
		Type   string `json:"type"`
		Title  string `json:"title"`
		Status int    `json:"status"`
		Detail string `json:"detail"`
	}
	if err := json.Unmarshal(data, &p); err != nil || p.Status == 0 {
		return fmt.Errorf("client: exec failed: %s", data)
	}
	return &APIError{Status: p.Status, Type: p.Type, Title: p.Title, Detail: p.Detail, Method: http.MethodPost, Path: path}
}

// decodeChunk returns the bytes of an ExecChunk, whichever form they
// travel in.
func decodeChunk(data []byte) ([]byte, error) {
	var ch sandboxapi.ExecChunk
	if err := json.Unmarshal(data, &ch); err != nil {
		return nil, err
	}
	if ch.DataBase64 != "" {
		return base64.StdEncoding.DecodeString(ch.DataBase64)
	}
	return []byte(ch.Data), nil
}
