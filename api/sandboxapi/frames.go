package sandboxapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// Stream ids: the first byte of every binary frame the server sends on
// /v1/processes/{ref}/connect.
const (
	StreamStdout byte = 1 // stdout, or the terminal of a PTY process
	StreamStderr byte = 2
)

// Control frame types. Client to server: resize, signal, close_stdin.
// Server to client: truncated, exit.
const (
	FrameResize     = "resize"
	FrameSignal     = "signal"
	FrameCloseStdin = "close_stdin"
	FrameTruncated  = "truncated"
	FrameExit       = "exit"
	// FrameError answers a client frame the server could not apply, as
	// {"type":"error","detail":"..."}; the connection stays open.
	FrameError = "error"
)

// MaxControlFrame is the largest text frame either side accepts.
const MaxControlFrame = 4096

// ControlFrame is a JSON text frame of the connect protocol. Which fields
// are set depends on Type.
type ControlFrame struct {
	Type     string  `json:"type"`
	Rows     int     `json:"rows,omitempty"`
	Cols     int     `json:"cols,omitempty"`
	Signal   *string `json:"signal,omitempty"`
	From     int64   `json:"from,omitempty"`      // truncated: the oldest offset still retained
	ExitCode *int    `json:"exit_code,omitempty"` // exit
	Detail   string  `json:"detail,omitempty"`    // error
}

// MarshalJSON writes exit frames with explicit nulls, as the contract shows.
func (f ControlFrame) MarshalJSON() ([]byte, error) {
	switch f.Type {
	case FrameExit:
		return json.Marshal(struct {
			Type     string  `json:"type"`
			ExitCode *int    `json:"exit_code"`
			Signal   *string `json:"signal"`
		}{f.Type, f.ExitCode, f.Signal})
	case FrameTruncated:
		return json.Marshal(struct {
			Type string `json:"type"`
			From int64  `json:"from"`
		}{f.Type, f.From})
	}
	type plain ControlFrame
	return json.Marshal(plain(f))
}

// ErrBadFrame is returned for control frames that are not valid.
var ErrBadFrame = errors.New("bad control frame")

// ParseClientFrame parses and validates a text frame sent by a client.
func ParseClientFrame(data []byte) (ControlFrame, error) {
	var f ControlFrame
	if len(data) > MaxControlFrame {
		return f, fmt.Errorf("%w: %d bytes, limit %d", ErrBadFrame, len(data), MaxControlFrame)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return ControlFrame{}, fmt.Errorf("%w: %v", ErrBadFrame, err)
	}
	if dec.More() {
		return ControlFrame{}, fmt.Errorf("%w: trailing data", ErrBadFrame)
	}
	switch f.Type {
	case FrameResize:
		if err := ValidSize(f.Rows, f.Cols); err != nil {
			return ControlFrame{}, fmt.Errorf("%w: %v", ErrBadFrame, err)
		}
	case FrameSignal:
		if f.Signal == nil || *f.Signal == "" {
			return ControlFrame{}, fmt.Errorf("%w: signal frame needs a signal", ErrBadFrame)
		}
	case FrameCloseStdin:
	default:
		return ControlFrame{}, fmt.Errorf("%w: unknown type %q", ErrBadFrame, f.Type)
	}
	return f, nil
}

// ValidSize checks a terminal size: both dimensions in 1..10000.
func ValidSize(rows, cols int) error {
	if rows < 1 || rows > 10000 || cols < 1 || cols > 10000 {
		return fmt.Errorf("terminal size %dx%d out of range 1..10000", rows, cols)
	}
	return nil
}
