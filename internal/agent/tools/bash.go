package tools

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/corral-sh/corral/api/sandboxapi"
	"github.com/corral-sh/corral/client"
	"github.com/corral-sh/corral/internal/llm"
)

// Bash tuning.
const (
	DefaultCommandTimeout = 120 * time.Second
	MaxCommandTimeout     = 30 * time.Minute
	// scriptDir holds the command files the shell sources, outside the
	// workspace so they never reach the artifacts.
	scriptDir = "/tmp/.corral-agent"
	// shellBuffer is sandboxd's output window for the shell.
	shellBuffer = 16 << 20
	// interruptGrace is how long an interrupted command has to end
	// before the shell is replaced.
	interruptGrace = 5 * time.Second
	// MaxOutput caps what one command's observation keeps (the log's
	// copy); longer output keeps its head and tail.
	MaxOutput = 1 << 20
)

// marker ends every command's output: RS "CORRAL:" nonce ":" status RS.
// The nonce is the call's, so a resumed agent finds the end of a command
// that ran while the control plane was down.
var markerRE = regexp.MustCompile("\x1eCORRAL:([0-9a-zA-Z_-]+):(-?[0-9]+)\x1e\n?")

// startRE matches the line the shell prints as it begins a command, so
// that Recover can tell a command that never started from one still
// running.
var startRE = regexp.MustCompile("\x1eCORRAL-START:([0-9a-zA-Z_-]+)\x1e\n?")

// ansiRE matches terminal control sequences (colours, cursor moves).
var ansiRE = regexp.MustCompile(`\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[@-Z\\-_])`)

// Bash runs commands in one persistent interactive shell per job, on a
// terminal in the sandbox (so ctrl-C interrupts the command, not the
// shell, and a person can attach to it and watch). cd and exported
// variables persist between calls. Each command is written to a file the
// shell sources with stdin from /dev/null, followed by a marker carrying
// its exit status; the output is read from sandboxd's output log by
// offset, so nothing depends on a connection staying up.
type Bash struct {
	env *Env

	mu     sync.Mutex // one command at a time
	ref    string     // the shell's process tag
	offset int64      // output consumed so far
	ready  bool
	exited bool // the last shell exited: tell the model its state is gone
}

// NewBash returns the bash tool of env.
func NewBash(env *Env) *Bash {
	return &Bash{env: env, ref: ShellTag(env.JobID)}
}

// ShellTag is the sandboxd tag of job id's agent shell.
func ShellTag(jobID string) string { return "agent-shell-" + jobID }

// Spec implements Tool.
func (b *Bash) Spec() llm.Tool {
	return llm.Tool{Name: "bash", Description: "Run a bash command in the sandbox. The shell persists between calls: " +
		"the working directory and exported variables carry over. Commands run without a terminal for input (stdin is /dev/null), " +
		"so use non-interactive flags. Long output is cut to its head and tail. A command that runs past its timeout " +
		"(default 120 s) is interrupted with ctrl-C. Start long-running servers in the background with nohup … &.",
		Schema: json.RawMessage(`{"type":"object","properties":{
"command":{"type":"string","minLength":1,"description":"The command(s) to run, as you would type them into bash."},
"timeout":{"type":"integer","minimum":1,"maximum":1800,"description":"Seconds before the command is interrupted (default 120)."},
"restart":{"type":"boolean","description":"Start a fresh shell first (the old one is killed)."}},
"required":["command"],"additionalProperties":false}`)}
}

type bashInput struct {
	Command string `json:"command"`
	Timeout int    `json:"timeout"`
	Restart bool   `json:"restart"`
}

// Run implements Tool. callID makes the end marker of this command.
func (b *Bash) Run(ctx context.Context, input json.RawMessage) (Result, error) {
	return b.RunCall(ctx, "", input)
}

// RunCall runs one call. key, unique within the job (the agent's step and
// call index), becomes the marker's nonce so that Recover can find the
// command's end after a crash; "" picks a random one.
func (b *Bash) RunCall(ctx context.Context, key string, input json.RawMessage) (Result, error) {
	var in bashInput
	if err := decode(input, &in); err != nil {
		return Result{}, err
	}
	if strings.ContainsRune(in.Command, 0) {
		return Errorf("the command contains a NUL byte"), nil
	}
	timeout := DefaultCommandTimeout
	if in.Timeout > 0 {
		timeout = min(time.Duration(in.Timeout)*time.Second, MaxCommandTimeout)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if in.Restart {
		if err := b.kill(ctx); err != nil {
			return Result{}, err
		}
	}
	note, err := b.ensure(ctx)
	if err != nil {
		return Result{}, err
	}
	nonce := nonceOf(key)
	line, err := b.commandLine(ctx, nonce, in.Command)
	if err != nil {
		return Result{}, err
	}
	note2, err := b.send(ctx, line)
	if err != nil {
		return Result{}, err
	}
	res, err := b.await(ctx, nonce, timeout)
	if err != nil {
		return Result{}, err
	}
	res.Output = note + note2 + res.Output
	return res, nil
}

// inlineMax is the longest command sent on the shell's input line
// itself; longer ones go through a file (a terminal's line holds 4 KiB).
const inlineMax = 2000

// commandLine is what the shell is sent for one command: a start marker,
// the command with stdin from /dev/null, and the end marker with its
// status. Short commands are evaluated from a quoted string (a syntax
// error stays inside eval); long ones are written to a file and sourced.
func (b *Bash) commandLine(ctx context.Context, nonce, command string) (string, error) {
	start := fmt.Sprintf("printf '\\036CORRAL-START:%%s\\036\\n' %s; ", nonce)
	end := fmt.Sprintf("; printf '\\036CORRAL:%%s:%%d\\036\\n' %s $?", nonce)
	if len(command) <= inlineMax {
		quoted := "'" + strings.ReplaceAll(command, "'", `'\''`) + "'"
		return start + "eval " + quoted + " < /dev/null" + end + "\n", nil
	}
	file := scriptDir + "/" + nonce + ".sh"
	if _, err := b.env.Sandbox.WriteFile(ctx, file, strings.NewReader(command+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("tools: bash: writing the command: %w", err)
	}
	return start + ". " + file + " < /dev/null" + end + "; rm -f " + file + "\n", nil
}

// Recover finishes a call that was running when the control plane went
// down: if the shell printed the call's marker, its output is the result;
// if the shell still runs, Recover waits for the marker (the command may
// still be running). found is false when the command left no trace (it
// never started, or the shell is gone), so the caller may run it again.
func (b *Bash) Recover(ctx context.Context, key string, input json.RawMessage) (res Result, found bool, err error) {
	var in bashInput
	if err := decode(input, &in); err != nil {
		return Result{}, false, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	p, err := b.env.Sandbox.GetProcess(ctx, b.ref)
	if errors.Is(err, client.ErrNotFound) {
		return Result{}, false, nil
	}
	if err != nil {
		return Result{}, false, fmt.Errorf("tools: bash: finding the shell: %w", err)
	}
	nonce := nonceOf(key)
	out, err := b.env.Sandbox.ReadOutput(ctx, b.ref, client.OutputOptions{Offset: 0, Limit: shellBuffer})
	if err != nil {
		return Result{}, false, b.lost(ctx, err)
	}
	// Where this call's marker is, or the shell's end if it is still running.
	data := out.Data
	for _, m := range markerRE.FindAllSubmatchIndex(data, -1) {
		if string(data[m[2]:m[3]]) == nonce {
			b.offset, b.ready = out.Offset+int64(m[1]), true
			code, _ := strconv.Atoi(string(data[m[4]:m[5]]))
			return commandResult(data[:m[0]], code), true, nil
		}
	}
	started := -1
	for _, m := range startRE.FindAllSubmatchIndex(data, -1) {
		if string(data[m[2]:m[3]]) == nonce {
			started = m[0]
		}
	}
	if p.Status != sandboxapi.StatusRunning || started < 0 {
		// Never started (or its shell is gone): the caller runs it anew
		// on a shell that continues from here.
		b.offset, b.ready = out.NextOffset, p.Status == sandboxapi.StatusRunning
		return Result{}, false, nil
	}
	// Still running: wait for its end from where it began.
	b.offset, b.ready = out.Offset+int64(started), true
	timeout := DefaultCommandTimeout
	if in.Timeout > 0 {
		timeout = min(time.Duration(in.Timeout)*time.Second, MaxCommandTimeout)
	}
	res, err = b.await(ctx, nonce, timeout)
	return res, err == nil, err
}

// commandResult turns output up to a marker into a result; it keeps only
// what followed the previous marker.
func commandResult(before []byte, code int) Result {
	if ms := markerRE.FindAllIndex(before, -1); len(ms) > 0 {
		before = before[ms[len(ms)-1][1]:]
	}
	return finishOutput(nil, before, code, false, 0)
}

// ensure starts the shell unless this tool already did; the note tells
// the model when its shell was replaced. A shell that died meanwhile is
// found when writing to it fails (see send).
func (b *Bash) ensure(ctx context.Context) (note string, err error) {
	if !b.ready {
		if err := b.start(ctx); err != nil {
			return "", err
		}
	}
	if b.exited {
		note = "[the previous shell had exited; this is a new one: the working directory and variables were reset]\n"
		b.exited = false
	}
	return note, nil
}

// send writes a command line to the shell; if the shell is gone (it
// exited, or someone deleted it) it starts a new one and sends again.
func (b *Bash) send(ctx context.Context, line string) (note string, err error) {
	err = b.env.Sandbox.WriteInput(ctx, b.ref, []byte(line))
	if errors.Is(err, client.ErrConflict) || errors.Is(err, client.ErrNotFound) {
		_ = b.env.Sandbox.DeleteProcess(ctx, b.ref)
		b.ready = false
		if err := b.start(ctx); err != nil {
			return "", err
		}
		note = "[the previous shell had exited; this is a new one: the working directory and variables were reset]\n"
		err = b.env.Sandbox.WriteInput(ctx, b.ref, []byte(line))
	}
	if err != nil {
		return "", b.lost(ctx, err)
	}
	return note, nil
}

func (b *Bash) start(ctx context.Context) error {
	if p, err := b.env.Sandbox.GetProcess(ctx, b.ref); err == nil {
		if p.Status == sandboxapi.StatusRunning {
			// A shell from before a restart of the control plane: reuse
			// it from the end of its output.
			out, err := b.env.Sandbox.ReadOutput(ctx, b.ref, client.OutputOptions{Offset: 0, Limit: shellBuffer})
			if err != nil {
				return b.lost(ctx, err)
			}
			b.offset, b.ready = out.NextOffset, true
			return nil
		}
		_ = b.env.Sandbox.DeleteProcess(ctx, b.ref)
	}
	if _, err := b.env.Sandbox.Mkdir(ctx, scriptDir, true); err != nil {
		return fmt.Errorf("tools: bash: creating %s: %w", scriptDir, err)
	}
	env := map[string]string{}
	for k, v := range b.env.ShellEnv {
		env[k] = v
	}
	for k, v := range map[string]string{"PS1": "", "PS2": "", "PROMPT_COMMAND": "", "TERM": "dumb",
		"HISTFILE": "/dev/null", "PAGER": "cat", "GIT_PAGER": "cat", "DEBIAN_FRONTEND": "noninteractive"} {
		env[k] = v
	}
	p, err := b.env.Sandbox.Spawn(ctx, sandboxapi.SpawnRequest{
		Command: "bash", Args: []string{"--noprofile", "--norc", "--noediting", "-i"},
		Cwd: b.env.Workdir, Env: env, PTY: &sandboxapi.PTYSize{Rows: 50, Cols: 250},
		Tag: b.ref, Label: "agent shell", BufferBytes: shellBuffer,
	})
	if err != nil {
		return fmt.Errorf("tools: bash: starting the shell: %w", err)
	}
	_ = p
	nonce := nonceOf("")
	setup := fmt.Sprintf("stty -echo -onlcr; set +m +H; printf '\\036CORRAL:%%s:%%d\\036\\n' %s 0\n", nonce)
	if err := b.env.Sandbox.WriteInput(ctx, b.ref, []byte(setup)); err != nil {
		return b.lost(ctx, err)
	}
	b.offset = 0
	if _, err := b.await(ctx, nonce, 30*time.Second); err != nil {
		return fmt.Errorf("tools: bash: the shell did not start: %w", err)
	}
	b.ready = true
	return nil
}

// await reads the shell's output from b.offset until nonce's marker, for
// at most timeout; then it interrupts the command. Output beyond
// MaxOutput keeps its head and its tail.
func (b *Bash) await(ctx context.Context, nonce string, timeout time.Duration) (Result, error) {
	deadline := time.Now().Add(timeout)
	var head, buf []byte // head: the first bytes, once buf overflowed; buf: the rest
	interrupted := false
	var skipped int64
	for {
		if m := findMarker(buf, nonce); m != nil {
			b.offset += int64(m[1])
			code, _ := strconv.Atoi(string(buf[m[4]:m[5]]))
			if interrupted && code == 0 {
				code = 130
			}
			return finishOutput(head, buf[:m[0]], code, interrupted, skipped), nil
		}
		wait := time.Until(deadline)
		if wait <= 0 {
			if interrupted {
				// ctrl-C did not end it: replace the shell.
				if err := b.kill(ctx); err != nil {
					return Result{}, err
				}
				res := finishOutput(head, buf, 137, true, skipped)
				res.Output += "\n[the command did not stop on ctrl-C; the shell was killed and will be restarted: the working directory and variables were reset]"
				return res, nil
			}
			interrupted = true
			deadline = time.Now().Add(interruptGrace)
			// ctrl-C to the foreground job; then a marker of our own, since
			// an interrupt also ends the line that would have printed one.
			_ = b.env.Sandbox.WriteInput(ctx, b.ref, []byte{0x03})
			_ = b.env.Sandbox.WriteInput(ctx, b.ref, []byte(fmt.Sprintf("printf '\\036CORRAL:%%s:%%d\\036\\n' %s 130\n", nonce)))
			continue
		}
		waitMS := int(min(wait, 10*time.Second) / time.Millisecond)
		at := b.offset + int64(len(buf))
		out, err := b.env.Sandbox.ReadOutput(ctx, b.ref, client.OutputOptions{Offset: at, WaitMS: max(waitMS, 1)})
		if err != nil {
			return Result{}, b.lost(ctx, err)
		}
		if out.Truncated && out.Offset > at {
			skipped += out.Offset - at
			b.offset += out.Offset - at
		}
		buf = append(buf, out.Data...)
		if len(out.Data) == 0 && out.Status == sandboxapi.StatusExited {
			b.offset += int64(len(buf))
			b.ready, b.exited = false, true
			res := finishOutput(head, buf, -1, interrupted, skipped)
			if p, err := b.env.Sandbox.GetProcess(ctx, b.ref); err == nil && p.ExitCode != nil {
				c := *p.ExitCode
				res.ExitCode, res.IsError = &c, c != 0
			}
			res.Output += "\n[the shell exited; the next command starts a new one]"
			_ = b.env.Sandbox.DeleteProcess(ctx, b.ref)
			return res, nil
		}
		if len(buf) > MaxOutput {
			// Keep the head once, then only a tail long enough to hold
			// the marker when it comes.
			if head == nil {
				head = append([]byte{}, buf[:MaxOutput/2]...)
				buf = buf[MaxOutput/2:]
				b.offset += MaxOutput / 2
			}
			if drop := len(buf) - MaxOutput/2; drop > 0 {
				skipped += int64(drop)
				b.offset += int64(drop)
				buf = append([]byte{}, buf[drop:]...)
			}
		}
	}
}

// findMarker finds nonce's marker in buf: the indexes of the whole match
// and the submatches, or nil.
func findMarker(buf []byte, nonce string) []int {
	for _, m := range markerRE.FindAllSubmatchIndex(buf, -1) {
		if string(buf[m[2]:m[3]]) == nonce {
			return m
		}
	}
	return nil
}

// finishOutput cleans a command's output (its head, if it overflowed,
// and the rest) for people and models.
func finishOutput(head, raw []byte, code int, interrupted bool, skipped int64) Result {
	s := clean(raw)
	switch {
	case head != nil:
		s = clean(head) + fmt.Sprintf("\n[… %d bytes of output omitted …]\n", skipped) + s
	case skipped > 0:
		s = fmt.Sprintf("[… %d bytes of output were lost …]\n", skipped) + s
	}
	if interrupted {
		s += "\n[interrupted: the command ran past its timeout]"
	}
	c := code
	return Result{Output: s, ExitCode: &c, IsError: code != 0}
}

// clean turns terminal output into text: CRLF to LF, no control
// sequences, no markers, valid UTF-8.
func clean(raw []byte) string {
	s := ansiRE.ReplaceAllString(string(bytes.ReplaceAll(raw, []byte("\r\n"), []byte("\n"))), "")
	s = markerRE.ReplaceAllString(s, "")
	s = startRE.ReplaceAllString(s, "")
	return strings.ToValidUTF8(s, "\uFFFD")
}

// kill stops and removes the shell.
func (b *Bash) kill(ctx context.Context) error {
	b.ready = false
	if err := b.env.Sandbox.DeleteProcess(ctx, b.ref); err != nil && !errors.Is(err, client.ErrNotFound) {
		return b.lost(ctx, err)
	}
	return nil
}

// Close stops the shell (the job is over).
func (b *Bash) Close(ctx context.Context) {
	b.mu.Lock()
	defer b.mu.Unlock()
	_ = b.kill(ctx)
}

// lost wraps a sandbox error.
func (b *Bash) lost(_ context.Context, err error) error {
	return fmt.Errorf("tools: bash: the sandbox's shell: %w", err)
}

// nonceOf makes a marker nonce from a call key, or a random one.
func nonceOf(key string) string {
	var b strings.Builder
	for _, r := range key {
		if r < 128 && (r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			b.WriteRune(r)
		}
	}
	if b.Len() >= 2 && b.Len() <= 64 {
		return b.String()
	}
	var rnd [8]byte
	_, _ = rand.Read(rnd[:])
	return hex.EncodeToString(rnd[:])
}
