package gitops

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/corral-sh/corral/internal/errdefs"
)

// Output limits of one git command.
const (
	// defaultMaxOutput caps stdout unless the command says otherwise.
	defaultMaxOutput = 16 << 20
	// maxStderr is how much of the end of stderr is kept for messages.
	maxStderr = 64 << 10
	// maxDetail bounds the git message quoted in an error.
	maxDetail = 2 << 10
	// waitDelay bounds the wait for output pipes held open by a process
	// git left behind.
	waitDelay = time.Second
)

// Errors a run can end with besides git's own failure.
var (
	errTimedOut = errors.New("timed out")
	errOverflow = errors.New("output over the limit")
)

// gitCmd is one git invocation.
type gitCmd struct {
	dir     string   // host directory git runs in
	args    []string // the subcommand and its arguments
	env     []string // additions to the environment
	stdin   string
	timeout time.Duration
	// maxOut caps stdout (defaultMaxOutput when 0); more is ErrTooLarge,
	// unless truncated is set: then git runs to its end, the output is
	// cut at maxOut and truncated is called.
	maxOut    int64
	truncated func()
	// creds, when set, are served to git through an askpass socket and
	// scrubbed from everything git says.
	creds *creds
	// readOnly lets git skip optional locks (GIT_OPTIONAL_LOCKS=0), so a
	// status never competes for the index with the user's own git.
	readOnly bool
}

// gitFailure is git exiting with a non-zero status. Its message is
// scrubbed and safe to log; classify turns it into an errdefs class.
type gitFailure struct {
	sub    string // the subcommand, "clone"
	code   int
	stderr string // scrubbed
	stdout string // scrubbed, for commands that report there
}

func (f *gitFailure) Error() string {
	return fmt.Sprintf("git %s: exit status %d: %s", f.sub, f.code, f.message())
}

// message is git's diagnostic, shortened: the end of stderr without hint
// lines (or of stdout when stderr is empty).
func (f *gitFailure) message() string {
	text := f.stderr
	if strings.TrimSpace(text) == "" {
		text = f.stdout
	}
	var lines []string
	for l := range strings.SplitSeq(text, "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "hint:") {
			lines = append(lines, l)
		}
	}
	msg := strings.Join(lines, "; ")
	if len(msg) > maxDetail {
		msg = "..." + msg[len(msg)-maxDetail:]
	}
	if msg == "" {
		msg = "no message"
	}
	return msg
}

// baseConfig is given to every git command on its command line, where it
// overrides the repository's configuration, which whoever works in the
// sandbox controls. None of it is secret.
var baseConfig = []string{
	"--no-pager",
	"-c", "credential.helper=", // clears every helper: none may store or supply credentials
	"-c", "core.hooksPath=/dev/null", // no repository hooks run under the API
	"-c", "core.fsmonitor=false",
	"-c", "color.ui=false",
	"-c", "gc.auto=0", "-c", "maintenance.auto=false", // no background processes left behind
	"-c", "push.gpgSign=false",
	"-c", "log.showSignature=false",
}

// run runs git and returns its stdout.
//
// Git runs through os/exec, not the procs manager: it is an internal
// helper of one request, not a process the API lists. That is safe when
// sandboxd is PID 1 with the orphan reaper (package reaper): cmd.Wait runs
// right after cmd.Start on this goroutine and reaps the child through its
// pidfd the moment it exits, while the reaper leaves any zombie alone for
// reaper.DefaultMinAge (1 s) first, so it never takes git's exit status.
// Git's own helpers are git's children; any it orphans (when a timeout
// kills its process group) are exactly what the reaper is for.
func (s *Service) run(ctx context.Context, c gitCmd) ([]byte, error) {
	gitPath, err := exec.LookPath("git")
	if err != nil {
		return nil, errdefs.Unprocessablef("git is not installed in the sandbox")
	}
	sub := c.args[0]
	scrub := newScrubber(c.creds)
	env := s.env(c)
	var ap *askpass
	if c.creds != nil {
		if ap, err = startAskpass(s.tmp, c.creds, s.log); err != nil {
			return nil, err
		}
		defer ap.close()
		env = append(env, ap.env(s.askpass)...)
	} else {
		// No askpass: a prompt fails at once instead of waiting.
		env = append(env, "GIT_ASKPASS=")
	}

	rctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	rctx, stop := context.WithTimeoutCause(rctx, c.timeout, errTimedOut)
	defer stop()

	limit := c.maxOut
	if limit <= 0 {
		limit = defaultMaxOutput
	}
	over := func() { cancel(errOverflow) }
	if c.truncated != nil {
		over = c.truncated
	}
	stdout := &capped{limit: limit, over: over}
	stderr := &tail{limit: maxStderr}
	cmd := exec.CommandContext(rctx, gitPath, append(append([]string{}, baseConfig...), c.args...)...)
	cmd.Dir, cmd.Env = c.dir, env
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if c.stdin != "" {
		cmd.Stdin = strings.NewReader(c.stdin)
	}
	// Its own process group, so a timeout or a client that goes away kills
	// git together with its helpers (remote-https, askpass, pack-objects).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = waitDelay

	start := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, errdefs.Wrap(errdefs.ErrUnprocessable, err, "starting git failed")
	}
	if ap != nil {
		ap.started(cmd.Process.Pid)
	}
	werr := cmd.Wait()
	s.log.Debug("git", "args", scrub.scrub(strings.Join(c.args, " ")), "dir", c.dir,
		"duration", time.Since(start), "err", scrubErr(scrub, werr))

	switch cause := context.Cause(rctx); {
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case errors.Is(cause, errTimedOut):
		return nil, errdefs.Wrap(errdefs.ErrTimeout, errTimedOut, fmt.Sprintf("git %s timed out after %s", sub, c.timeout))
	case errors.Is(cause, errOverflow):
		return nil, errdefs.TooLargef("git %s produced more than %d bytes", sub, limit)
	}
	var ee *exec.ExitError
	switch {
	case werr == nil, errors.Is(werr, exec.ErrWaitDelay):
		return stdout.buf.Bytes(), nil
	case errors.As(werr, &ee):
		return nil, &gitFailure{sub: sub, code: ee.ExitCode(),
			stderr: scrub.scrub(stderr.String()), stdout: scrub.scrub(stdout.buf.String())}
	}
	return nil, fmt.Errorf("gitops: git %s: %s", sub, scrubErr(scrub, werr))
}

// env is the environment of a git command: the daemon's, without any
// GIT_* or CORRAL_* variable (so nothing redirects the repository, the
// index or the configuration), plus what makes git non-interactive and
// its messages predictable.
func (s *Service) env(c gitCmd) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "GIT_") || strings.HasPrefix(k, "CORRAL_") || k == "SSH_ASKPASS" || k == "LC_ALL" || k == "LANG" || k == "LANGUAGE" {
			continue
		}
		env = append(env, kv)
	}
	env = append(env,
		"LC_ALL=C", "LANG=C",
		"GIT_TERMINAL_PROMPT=0",
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_EDITOR=:", "GIT_PAGER=cat",
		"GIT_SSH_COMMAND=ssh -o BatchMode=yes",
		"SSH_ASKPASS_REQUIRE=never",
	)
	if s.ceiling != "" {
		// Repository discovery stops at the root: a path inside it never
		// finds a repository above it.
		env = append(env, "GIT_CEILING_DIRECTORIES="+s.ceiling)
	}
	if c.readOnly {
		env = append(env, "GIT_OPTIONAL_LOCKS=0")
	}
	if c.creds != nil {
		// Only the credentials' own transport: neither a rewritten URL
		// nor a submodule can take them to ssh, file or ext.
		env = append(env, "GIT_ALLOW_PROTOCOL="+c.creds.remote.scheme)
	}
	return append(env, c.env...)
}

func scrubErr(s scrubber, err error) string {
	if err == nil {
		return ""
	}
	return s.scrub(err.Error())
}

// capped keeps up to limit bytes and calls over, once, when more arrive;
// it never fails a write, so git is killed by over rather than blocked.
type capped struct {
	buf   bytes.Buffer
	limit int64
	over  func()
	done  bool
}

func (c *capped) Write(p []byte) (int, error) {
	if c.done {
		return len(p), nil
	}
	if int64(c.buf.Len()+len(p)) > c.limit {
		c.done = true
		c.over()
		return len(p), nil
	}
	c.buf.Write(p)
	return len(p), nil
}

// tail keeps the last limit bytes written.
type tail struct {
	buf   []byte
	limit int
}

func (t *tail) Write(p []byte) (int, error) {
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.limit; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

func (t *tail) String() string { return string(t.buf) }

// ceilingFor is GIT_CEILING_DIRECTORIES for a root: its parent, so that
// discovery may reach the root itself but nothing above. "" for "/".
func ceilingFor(rootDir string) string {
	if rootDir == "/" {
		return ""
	}
	return filepath.Dir(rootDir)
}
