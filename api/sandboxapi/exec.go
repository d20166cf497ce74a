package sandboxapi

// ExecRequest is the body of POST /v1/exec.
type ExecRequest struct {
	Command        string            `json:"command"`
	Args           []string          `json:"args,omitempty"`
	Shell          bool              `json:"shell,omitempty"`
	Cwd            string            `json:"cwd,omitempty"`
	Env            map[string]string `json:"env,omitempty"`
	Stdin          *string           `json:"stdin,omitempty"`
	TimeoutMS      int64             `json:"timeout_ms,omitempty"`
	MaxOutputBytes int64             `json:"max_output_bytes,omitempty"`
}

// ExecResult is the 200 body of POST /v1/exec, and the data of the final
// "exit" event of its streaming form (without Stdout and Stderr there).
type ExecResult struct {
	ExitCode        *int    `json:"exit_code"`
	Signal          *string `json:"signal"`
	Stdout          string  `json:"stdout"`
	Stderr          string  `json:"stderr"`
	StdoutTruncated bool    `json:"stdout_truncated"`
	StderrTruncated bool    `json:"stderr_truncated"`
	TimedOut        bool    `json:"timed_out"`
	DurationMS      int64   `json:"duration_ms"`
}

// ExecChunk is the data of the "stdout" and "stderr" events of streaming exec.
// Data holds the bytes as a string when they are valid UTF-8; otherwise
// DataBase64 holds them.
type ExecChunk struct {
	Data       string `json:"data,omitempty"`
	DataBase64 string `json:"data_base64,omitempty"`
}

// Event names of streaming exec.
const (
	ExecEventStdout = "stdout"
	ExecEventStderr = "stderr"
	ExecEventExit   = "exit"
	// ExecEventError replaces exit when the command could not run after the
	// stream began; its data is a problem+json body.
	ExecEventError = "error"
)
