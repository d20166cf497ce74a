// Package cpapi holds the wire types of the control plane API (DESIGN.md
// §3): jobs, events, sandboxes, tokens and the seed-001 forms. The server,
// the Go SDK and the CLI all use these types, so the contract has one
// definition in Go.
package cpapi

import (
	"encoding/json"
	"time"
)

// Agents.
const (
	AgentScript     = "script"
	AgentBuiltin    = "builtin"
	AgentClaudeCode = "claude-code"
	AgentCodex      = "codex"
	AgentOpenCode   = "opencode"
	AgentGemini     = "gemini"
)

// Job statuses (DESIGN.md §3).
const (
	JobPending    = "pending"
	JobCreating   = "creating"
	JobRunning    = "running"
	JobCompleting = "completing"
	JobCompleted  = "completed"
	JobFailed     = "failed"
	JobCancelled  = "cancelled"
)

// Status reasons.
const (
	ReasonTimeout     = "timeout"
	ReasonIdle        = "idle_timeout"
	ReasonSandboxLost = "sandbox_lost"
	ReasonAgentError  = "agent_error"
	ReasonExitCode    = "exit_code"
	ReasonCancelled   = "cancelled"
	ReasonInfra       = "infrastructure_error"
	ReasonSecret      = "secret_unavailable" // a secret the job names is missing or unreadable
	ReasonCloneFailed = "clone_failed"       // the repository could not be cloned (URL, auth, ref)
	ReasonPushFailed  = "push_failed"        // the job's branch could not be pushed
	ReasonPRFailed    = "pr_failed"          // the forge refused the pull request
)

// Networks.
const (
	NetworkNone   = "none"
	NetworkEgress = "egress"
)

// Resources are sandbox limits.
type Resources struct {
	CPUs     float64 `json:"cpus,omitempty"`
	MemoryMB int64   `json:"memory_mb,omitempty"`
	PIDs     int64   `json:"pids,omitempty"`
	DiskMB   int64   `json:"disk_mb,omitempty"`
}

// Repo is the repository a job works on.
type Repo struct {
	URL string `json:"url"`
	Ref string `json:"ref,omitempty"`
	// Secret names the tenant secret holding the token used to clone,
	// push and open the pull request ("" for a public repository).
	Secret string `json:"secret,omitempty"`
}

// JobRequest is the body of POST /v1/jobs.
type JobRequest struct {
	Task      string            `json:"task"`
	Agent     string            `json:"agent,omitempty"` // default builtin
	Model     string            `json:"model,omitempty"` // "openai/<name>" or "anthropic/<name>"
	Command   string            `json:"command,omitempty"`
	Repo      *Repo             `json:"repo,omitempty"`
	Runtime   string            `json:"runtime,omitempty"`
	Template  string            `json:"template,omitempty"`
	Resources *Resources        `json:"resources,omitempty"`
	Network   string            `json:"network,omitempty"`
	TimeoutS  int64             `json:"timeout_s,omitempty"`
	Env       map[string]string `json:"env,omitempty"`
	// Secrets names tenant secrets (corral secret set) given to the
	// agent's processes as environment variables of the same name.
	Secrets []string          `json:"secrets,omitempty"`
	Labels  map[string]string `json:"labels,omitempty"`
}

// JobResult is what a finished job produced.
type JobResult struct {
	Summary  string `json:"summary,omitempty"`
	ExitCode *int   `json:"exit_code,omitempty"`
	Branch   string `json:"branch,omitempty"`
	PRURL    string `json:"pr_url,omitempty"`
	Commit   string `json:"commit,omitempty"`
}

// Job is a job as the API shows it.
type Job struct {
	ID           string            `json:"id"`
	Task         string            `json:"task"`
	Agent        string            `json:"agent"`
	Status       string            `json:"status"`
	StatusReason string            `json:"status_reason,omitempty"`
	SandboxID    string            `json:"sandbox_id,omitempty"`
	Runtime      string            `json:"runtime,omitempty"`
	CreatedAt    time.Time         `json:"created_at"`
	StartedAt    *time.Time        `json:"started_at"`
	FinishedAt   *time.Time        `json:"finished_at"`
	Result       *JobResult        `json:"result"`
	Labels       map[string]string `json:"labels"`
}

// JobList is a page of GET /v1/jobs; Next is the cursor of the next page,
// "" at the end.
type JobList struct {
	Jobs []Job  `json:"jobs"`
	Next string `json:"next,omitempty"`
}

// MessageRequest is the body of POST /v1/jobs/{id}/messages.
type MessageRequest struct {
	Text string `json:"text"`
}

// Event is one entry of a job's log (DESIGN.md §3).
type Event struct {
	Seq   int64           `json:"seq"`
	JobID string          `json:"job_id"`
	Time  time.Time       `json:"time"`
	Type  string          `json:"type"`
	Data  json.RawMessage `json:"data"`
}

// Event types.
const (
	EventJobState      = "job.state"
	EventMessage       = "message"
	EventAgentThought  = "agent.thought"
	EventToolCall      = "tool.call"
	EventToolResult    = "tool.result"
	EventProcessOutput = "process.output"
	EventArtifact      = "artifact"
	EventError         = "error"
	EventRaw           = "raw"
)

// StateData is the data of a job.state event.
type StateData struct {
	From   string `json:"from"`
	To     string `json:"to"`
	Reason string `json:"reason,omitempty"`
}

// MessageData is the data of a message event.
type MessageData struct {
	Role string `json:"role"` // user, agent or system
	Text string `json:"text"`
}

// OutputData is the data of a process.output event. Data holds the bytes
// as text when they are valid UTF-8, else DataBase64 holds them. Offset is
// the chunk's position in the process's output and Bytes its raw length,
// so a reader can tell the log is complete (and a recovering control
// plane where to resume).
type OutputData struct {
	Stream     string `json:"stream"` // stdout or stderr
	Data       string `json:"data,omitempty"`
	DataBase64 string `json:"data_base64,omitempty"`
	Offset     int64  `json:"offset"`
	Bytes      int64  `json:"bytes"`
}

// EventPage is GET /v1/jobs/{id}/events with Accept: application/json.
type EventPage struct {
	Events    []Event `json:"events"`
	NextAfter int64   `json:"next_after"`
}

// SandboxRequest is the body of POST /v1/sandboxes.
type SandboxRequest struct {
	Template  string            `json:"template,omitempty"`
	Runtime   string            `json:"runtime,omitempty"`
	Resources *Resources        `json:"resources,omitempty"`
	Network   string            `json:"network,omitempty"`
	TimeoutS  int64             `json:"timeout_s,omitempty"`
	Env       map[string]string `json:"env,omitempty"`
	Labels    map[string]string `json:"labels,omitempty"`
}

// Sandbox is a sandbox as the API shows it.
type Sandbox struct {
	ID        string            `json:"id"`
	Status    string            `json:"status"`
	Runtime   string            `json:"runtime"`
	Template  string            `json:"template"`
	CreatedAt time.Time         `json:"created_at"`
	ExpiresAt *time.Time        `json:"expires_at"`
	Labels    map[string]string `json:"labels,omitempty"`
}

// SandboxList is GET /v1/sandboxes.
type SandboxList struct {
	Sandboxes []Sandbox `json:"sandboxes"`
}

// TimeoutRequest is the body of POST /v1/sandboxes/{id}/timeout: the
// sandbox lives timeout_s from now.
type TimeoutRequest struct {
	TimeoutS int64 `json:"timeout_s"`
}

// ScheduleRequest and ScheduleResponse are the seed-001 form of job
// submission, POST /schedule.
type ScheduleRequest struct {
	Task string `json:"task"`
}

// ScheduleResponse answers POST /schedule.
type ScheduleResponse struct {
	JobID string `json:"job_id"`
}

// StatusResponse is GET /status/{id}: seed-001's coarse status
// (pending, running, complete, error) and where to download artifacts.
type StatusResponse struct {
	Status      string `json:"status"`
	DownloadURL string `json:"download_url,omitempty"`
}

// TokenRequest is the body of POST /v1/tokens.
type TokenRequest struct {
	Name string `json:"name"`
	// Tenant, for an admin token only, creates the token for another
	// tenant (created if new); empty means the caller's tenant.
	Tenant string `json:"tenant,omitempty"`
	Admin  bool   `json:"admin,omitempty"`
}

// Token describes a token; Secret is set only in the answer to its
// creation, the one time it is shown.
type Token struct {
	ID         string     `json:"id"`
	Name       string     `json:"name"`
	Tenant     string     `json:"tenant"`
	Admin      bool       `json:"admin"`
	CreatedAt  time.Time  `json:"created_at"`
	LastUsedAt *time.Time `json:"last_used_at"`
	Secret     string     `json:"secret,omitempty"`
}

// TokenList is GET /v1/tokens.
type TokenList struct {
	Tokens []Token `json:"tokens"`
}

// Tenant is GET /v1/tenants/{id}: a tenant and its limits (0: unlimited).
type Tenant struct {
	ID                string    `json:"id"`
	Name              string    `json:"name"`
	CreatedAt         time.Time `json:"created_at"`
	MaxConcurrentJobs int       `json:"max_concurrent_jobs"`
	MaxSandboxes      int       `json:"max_sandboxes"`
}

// TenantList is GET /v1/tenants (admin).
type TenantList struct {
	Tenants []Tenant `json:"tenants"`
}

// TenantLimits is the body of PATCH /v1/tenants/{id} (admin): the limits
// to change; an absent one is kept, 0 lifts it.
type TenantLimits struct {
	MaxConcurrentJobs *int `json:"max_concurrent_jobs,omitempty"`
	MaxSandboxes      *int `json:"max_sandboxes,omitempty"`
}

// TenantEvent is an event of GET /v1/events: a job's state changed.
type TenantEvent struct {
	JobID  string    `json:"job_id"`
	Seq    int64     `json:"seq"`
	Time   time.Time `json:"time"`
	From   string    `json:"from"`
	To     string    `json:"to"`
	Reason string    `json:"reason,omitempty"`
}
