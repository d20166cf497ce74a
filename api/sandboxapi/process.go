package sandboxapi

import "time"

// Process statuses.
const (
	StatusRunning = "running"
	StatusExited  = "exited"
)

// Process is a process managed by sandboxd.
type Process struct {
	ID          string            `json:"id"`
	Tag         string            `json:"tag,omitempty"`
	Label       string            `json:"label,omitempty"`
	Command     string            `json:"command"`
	Args        []string          `json:"args"`
	Cwd         string            `json:"cwd"`
	Env         map[string]string `json:"env"`
	PID         int               `json:"pid"`
	PTY         bool              `json:"pty"`
	Rows        int               `json:"rows,omitempty"`
	Cols        int               `json:"cols,omitempty"`
	Status      string            `json:"status"`
	ExitCode    *int              `json:"exit_code"`
	Signal      *string           `json:"signal"`
	CreatedAt   time.Time         `json:"created_at"`
	ExitedAt    *time.Time        `json:"exited_at"`
	OutputBytes int64             `json:"output_bytes"`
}

// PTYSize is a terminal size.
type PTYSize struct {
	Rows int `json:"rows"`
	Cols int `json:"cols"`
}

// SpawnRequest is the body of POST /v1/processes.
type SpawnRequest struct {
	Command     string            `json:"command"`
	Args        []string          `json:"args,omitempty"`
	Cwd         string            `json:"cwd,omitempty"`
	Env         map[string]string `json:"env,omitempty"`
	PTY         *PTYSize          `json:"pty,omitempty"`
	Tag         string            `json:"tag,omitempty"`
	Label       string            `json:"label,omitempty"`
	Stdin       bool              `json:"stdin,omitempty"`
	TimeoutMS   int64             `json:"timeout_ms,omitempty"`
	BufferBytes int64             `json:"buffer_bytes,omitempty"`
}

// ProcessList is the body of GET /v1/processes.
type ProcessList struct {
	Processes []Process `json:"processes"`
}

// SignalRequest is the body of POST /v1/processes/{ref}/signal. Signal is a
// name ("SIGINT" or "INT") or a number ("2").
type SignalRequest struct {
	Signal string `json:"signal"`
}

// InputRequest is the body of POST /v1/processes/{ref}/input: exactly one of
// Data and DataBase64.
type InputRequest struct {
	Data       *string `json:"data,omitempty"`
	DataBase64 *string `json:"data_base64,omitempty"`
}

// Process event types on GET /v1/events.
const (
	EventProcessCreated = "process.created"
	EventProcessUpdated = "process.updated"
	EventProcessExited  = "process.exited"
	EventProcessDeleted = "process.deleted"
)

// Output headers of GET /v1/processes/{ref}/output.
const (
	HeaderOffset     = "X-Offset"
	HeaderNextOffset = "X-Next-Offset"
	HeaderTruncated  = "X-Truncated"
	// HeaderProcessStatus carries the process's status ("running" or
	// "exited") with output, so a poller knows when to stop.
	HeaderProcessStatus = "X-Process-Status"
)
