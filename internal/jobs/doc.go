// Package jobs is the control plane's job engine (DESIGN.md §3): it accepts
// jobs, schedules them on a durable queue in the store, runs each in its own
// sandbox, watches them, packs what they produced, and picks them up again
// after a crash. It is domain code: no HTTP here; the controlplane package
// maps its errdefs classes to status codes.
//
// # Life cycle
//
//	pending ──► creating ──► running ──► completing ──► completed
//	              │            │             │
//	              └────────────┴─────────────┴──► failed (status_reason)
//	pending, creating, running, completing ──► cancelled
//
// The store owns the table (store.CanTransition) and enforces it: every
// move is a compare-and-set (store.TransitionJob) that commits the new state
// and its job.state event in one transaction, so a move is durable before
// anyone is told, and a move the table does not allow is an error. This
// package never writes a status any other way.
//
//	pending     Submit validated the request and stored it; the job waits in
//	            the queue (oldest first) for a worker of some replica.
//	creating    a worker claimed it (store.ClaimJob: a lease, atomic across
//	            replicas sharing PostgreSQL, honouring the tenant's
//	            max_concurrent_jobs) and is creating its sandbox. Sandbox
//	            creation is the one step retried: up to MaxAttempts times
//	            with exponential backoff, and only for infrastructure
//	            errors; then failed/infrastructure_error. (creating → pending
//	            is not a legal move, so retries stay inside creating.)
//	running     the sandbox id is recorded (SetJobSandbox, before the move);
//	            the agent runs. For agent=script that is `sh -c command` as a
//	            sandboxd process tagged "job-<id>" in /workspace, whose
//	            output is batched into process.output events (every 50 ms or
//	            64 KiB), each carrying the absolute offset and length of its
//	            bytes in the process's output log. Exit 0 → completing;
//	            any other exit → failed/exit_code with result.exit_code,
//	            after the artifacts are packed (a failure's workspace and log
//	            are what a user wants most).
//	completing  the artifact zip is packed (see artifacts.go), an artifact
//	            event appended, then → completed with result{exit_code,
//	            summary}. The sandbox is deleted just before the final move,
//	            so a final job holds no sandbox.
//	failed      reasons: exit_code, timeout, idle_timeout, sandbox_lost,
//	            infrastructure_error, agent_error.
//	cancelled   Cancel, from any non-final state; the sandbox is deleted.
//
// Nothing is appended to a job's log after its final job.state event by
// this process: every event a runner writes, and every transition, goes
// through the runner's gate (runner.gate), which Cancel holds while it
// cancels. (Across replicas the store offers no conditional append, so an
// output batch already in flight on the replica running the job can land
// after a cancel made on another one.)
//
// # Goroutines
//
// New starts nothing. Run owns everything and returns only when it has all
// stopped: the dispatcher (claims jobs while this replica has a free worker
// slot; woken by Submit, by a finishing job and every Poll), the guardian
// (wall-clock and idle timeouts, sandboxd heartbeats, lease renewal, the
// orphan sweep and the artifact retention sweep), and one goroutine per job
// (the runner), which while a script runs owns two more for the life of the
// output stream: the client Stream's reader and the batcher's flush timer.
// Heartbeat probes run in short-lived goroutines the guardian waits for.
// When Run's context ends, runners stop where they are without touching
// the job or its sandbox: a stopped control plane and a crashed one look
// the same, and both are recovered the same way.
//
// # Crash safety
//
// A job's claim (worker id + lease) stays on it from the claim to its final
// state and is renewed by the guardian every Lease/3. Recover, run once
// before Run, looks at every creating, running or completing job:
//
//   - claimed by this WorkerID (this replica before it died; WorkerID must
//     therefore be stable across restarts): the lease is renewed and the
//     job re-attached. A creating job gets its sandbox (again); a running
//     one whose sandbox is gone fails sandbox_lost; otherwise its process
//     is found by tag and its output read from the end of the last stored
//     process.output event (offset + bytes), so nothing is lost or written
//     twice while the gap fits in the process's 16 MiB output window (a
//     bigger gap is reported as an error event saying which bytes were
//     lost). A completing job is packed again.
//   - claimed by another worker whose lease ran out (an orphan): adopted
//     with store.AdoptJob, a compare-and-set on the claim, so exactly one
//     replica takes it over, then re-attached as above. The guardian
//     repeats this sweep every Lease.
package jobs
