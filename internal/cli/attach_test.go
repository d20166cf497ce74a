package cli

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/corral-sh/corral/api/sandboxapi"
	"github.com/corral-sh/corral/client"
	"github.com/corral-sh/corral/internal/sandboxd"
	"github.com/corral-sh/corral/internal/sandboxd/sandboxdtest"
)

const testToken = "attach-test-token"

// sandbox is a real daemon, the flags that reach it, and an SDK client.
type sandbox struct {
	flags []string
	c     *client.Client
}

func startSandbox(t *testing.T, unix bool) sandbox {
	t.Helper()
	d := sandboxdtest.Start(t, sandboxdtest.Options{Unix: unix, Config: sandboxd.Config{
		Token: testToken, Logger: slog.New(slog.DiscardHandler),
	}})
	s := sandbox{flags: []string{"--url", d.URL, "--token", testToken}}
	base := d.URL
	if unix {
		s.flags = []string{"--socket", d.Socket, "--token", testToken}
		base = "unix:" + d.Socket
	}
	var err error
	if s.c, err = client.New(base, client.WithToken(testToken)); err != nil {
		t.Fatal(err)
	}
	return s
}

// runCmd runs a command with stdin from in, stdout to out (a fresh buffer
// when nil), and returns its stdout, stderr and error.
func runCmd(ctx context.Context, t *testing.T, cmdArgs []string, in io.Reader, out *syncBuffer) (stdout, stderr string, err error) {
	t.Helper()
	root := map[string]func() *cobra.Command{"attach": attachCmd, "exec": execCmd}
	cmd := root[cmdArgs[0]]()
	if out == nil {
		out = newSyncBuffer()
	}
	var errOut bytes.Buffer
	cmd.SetArgs(cmdArgs[1:])
	cmd.SetIn(in)
	cmd.SetOut(out)
	cmd.SetErr(&errOut)
	cmd.SilenceUsage = true
	cmd.SilenceErrors = true
	err = cmd.ExecuteContext(ctx)
	return out.String(), errOut.String(), err
}

// syncBuffer is an output a test can watch while a command writes it.
type syncBuffer struct {
	mu      sync.Mutex
	b       bytes.Buffer
	changed chan struct{} // closed and replaced on every write
}

func newSyncBuffer() *syncBuffer { return &syncBuffer{changed: make(chan struct{})} }

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	close(s.changed)
	s.changed = make(chan struct{})
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// waitFor waits until the output contains sub.
func (s *syncBuffer) waitFor(ctx context.Context, sub string) bool {
	for {
		s.mu.Lock()
		found, changed := strings.Contains(s.b.String(), sub), s.changed
		s.mu.Unlock()
		if found {
			return true
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return false
		}
	}
}

// keystrokes is input typed once the output shows a text.
type keystrokes struct {
	after string // wait for this in the output first ("" = don't)
	text  string
}

// typeInto returns a pipe that gets each input as a user would type it,
// and closes it when the test ends.
func typeInto(ctx context.Context, t *testing.T, out *syncBuffer, input ...keystrokes) io.Reader {
	pr, pw := io.Pipe()
	t.Cleanup(func() { pw.Close() })
	go func() {
		for _, k := range input {
			if k.after != "" && !out.waitFor(ctx, k.after) {
				return
			}
			if _, err := pw.Write([]byte(k.text)); err != nil {
				return
			}
		}
	}()
	return pr
}

func spawnShell(ctx context.Context, t *testing.T, c *client.Client) *sandboxapi.Process {
	t.Helper()
	p, err := c.Spawn(ctx, sandboxapi.SpawnRequest{Command: "sh", PTY: &sandboxapi.PTYSize{Rows: 24, Cols: 80}, Tag: "term"})
	if err != nil {
		t.Fatalf("Spawn: %v", err)
	}
	t.Cleanup(func() { c.DeleteProcess(context.Background(), p.ID) })
	return p
}

func TestAttachExitCode(t *testing.T) {
	for _, unix := range []bool{false, true} {
		t.Run(map[bool]string{false: "tcp", true: "unix"}[unix], func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(t.Context(), 15*time.Second)
			defer cancel()
			s := startSandbox(t, unix)
			spawnShell(ctx, t, s.c)
			// h""i: the terminal echoes what is typed, so only the shell's
			// output reads "hi".
			out := newSyncBuffer()
			stdout, _, err := runCmd(ctx, t, append([]string{"attach"}, append(s.flags, "term")...),
				typeInto(ctx, t, out, keystrokes{text: "echo h\"\"i; exit 3\n"}), out)
			var ee *ExitError
			if !errors.As(err, &ee) || ee.Code != 3 {
				t.Fatalf("attach = %v; want ExitError{3}", err)
			}
			if !strings.Contains(stdout, "hi\r\n") {
				t.Errorf("attach output = %q; want it to contain the shell's %q", stdout, "hi\r\n")
			}
		})
	}
}

func TestAttachDetach(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 15*time.Second)
	defer cancel()
	s := startSandbox(t, false)
	p := spawnShell(ctx, t, s.c)

	out := newSyncBuffer()
	stdout, stderr, err := runCmd(ctx, t, append([]string{"attach"}, append(s.flags, "term")...),
		typeInto(ctx, t, out,
			keystrokes{text: "echo fir\"\"st\n"},
			keystrokes{after: "first\r\n", text: "\x10\x11"},
			keystrokes{text: "exit 9\n"}, // after the detach keys: never sent
		), out)
	if err != nil {
		t.Fatalf("attach with detach keys = %v; want nil", err)
	}
	if !strings.Contains(stderr, "detached") {
		t.Errorf("stderr = %q; want %q", stderr, "detached")
	}
	if !strings.Contains(stdout, "first\r\n") {
		t.Errorf("stdout = %q; want the output of the first command", stdout)
	}
	got, err := s.c.GetProcess(ctx, p.ID)
	if err != nil || got.Status != sandboxapi.StatusRunning {
		t.Fatalf("after detach: %+v, %v; want the shell still running", got, err)
	}

	// Attach again, custom keys, without replay: the old output is not
	// shown, and the shell's exit code comes back.
	args := append([]string{"attach", "--no-replay", "--detach-keys", "ctrl-x"}, append(s.flags, "term")...)
	out = newSyncBuffer()
	stdout, _, err = runCmd(ctx, t, args, typeInto(ctx, t, out, keystrokes{text: "exit 5\n"}), out)
	var ee *ExitError
	if !errors.As(err, &ee) || ee.Code != 5 {
		t.Fatalf("second attach = %v; want ExitError{5}", err)
	}
	if strings.Contains(stdout, "first") {
		t.Errorf("--no-replay output %q replays old output", stdout)
	}
}

func TestAttachUnknown(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	s := startSandbox(t, true)
	_, _, err := runCmd(ctx, t, append([]string{"attach"}, append(s.flags, "nope")...), strings.NewReader(""), nil)
	if !errors.Is(err, client.ErrNotFound) {
		t.Errorf("attach nope = %v; want ErrNotFound", err)
	}
}

func TestExecCommand(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	s := startSandbox(t, true)
	tests := []struct {
		args                   []string
		stdin                  string
		wantCode               int
		wantStdout, wantStderr string
	}{
		{[]string{"echo", "hello", "world"}, "", 0, "hello world\n", ""},
		{[]string{"--shell", "echo out; echo err >&2; exit 4"}, "", 4, "out\n", "err\n"},
		{[]string{"-e", "A=b", "sh", "-c", "echo $A"}, "", 0, "b\n", ""},
		{[]string{"-i", "cat"}, "piped", 0, "piped", ""},
		{[]string{"--shell", "kill -TERM $$"}, "", 128 + 15, "", ""},
	}
	for _, tt := range tests {
		args := append(append([]string{"exec"}, s.flags...), tt.args...)
		stdout, stderr, err := runCmd(ctx, t, args, strings.NewReader(tt.stdin), nil)
		code := 0
		if err != nil {
			var ee *ExitError
			if !errors.As(err, &ee) {
				t.Errorf("exec %q: %v", tt.args, err)
				continue
			}
			code = ee.Code
		}
		if code != tt.wantCode || stdout != tt.wantStdout || stderr != tt.wantStderr {
			t.Errorf("exec %q = code %d, stdout %q, stderr %q; want %d, %q, %q",
				tt.args, code, stdout, stderr, tt.wantCode, tt.wantStdout, tt.wantStderr)
		}
	}
}

func TestParseDetachKeys(t *testing.T) {
	tests := []struct {
		in      string
		want    []byte
		wantErr bool
	}{
		{"ctrl-p,ctrl-q", []byte{0x10, 0x11}, false},
		{"ctrl-P,ctrl-Q", []byte{0x10, 0x11}, false},
		{"ctrl-a", []byte{0x01}, false},
		{"ctrl-@", []byte{0x00}, false},
		{"ctrl-[,ctrl-\\,ctrl-],ctrl-^,ctrl-_", []byte{27, 28, 29, 30, 31}, false},
		{"a,b,ctrl-z", []byte{'a', 'b', 26}, false},
		{"", nil, false},
		{"ctrl-", nil, true},
		{"ctrl-1", nil, true},
		{"ctrl-pq", nil, true},
		{"ab", nil, true},
		{"ctrl-p,", nil, true},
	}
	for _, tt := range tests {
		got, err := parseDetachKeys(tt.in)
		if (err != nil) != tt.wantErr || !bytes.Equal(got, tt.want) {
			t.Errorf("parseDetachKeys(%q) = %v, %v; want %v, error %v", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestDetector(t *testing.T) {
	keys := []byte{0x10, 0x11} // ctrl-p ctrl-q
	tests := []struct {
		name    string
		keys    []byte
		reads   []string // successive reads
		wantOut string
		wantHit bool
	}{
		{"plain", keys, []string{"ls\n"}, "ls\n", false},
		{"sequence", keys, []string{"ab\x10\x11cd"}, "ab", true},
		{"split over reads", keys, []string{"ab\x10", "\x11"}, "ab", true},
		{"broken sequence passes through", keys, []string{"\x10x"}, "\x10x", false},
		{"held key then sequence", keys, []string{"\x10\x10\x11"}, "\x10", true},
		{"held at end", keys, []string{"a\x10"}, "a", false},
		{"single key", []byte{0x1d}, []string{"a\x1db"}, "a", true},
		{"no keys", nil, []string{"\x10\x11"}, "\x10\x11", false},
	}
	for _, tt := range tests {
		d := detector{keys: tt.keys}
		var out []byte
		hit := false
		for _, r := range tt.reads {
			o, h := d.filter([]byte(r))
			out = append(out, o...)
			if h {
				hit = true
				break
			}
		}
		if string(out) != tt.wantOut || hit != tt.wantHit {
			t.Errorf("%s: filter(%q) = %q, hit %v; want %q, %v", tt.name, tt.reads, out, hit, tt.wantOut, tt.wantHit)
		}
	}
}

func TestExitStatus(t *testing.T) {
	code := func(n int) *int { return &n }
	sig := func(s string) *string { return &s }
	tests := []struct {
		code *int
		sig  *string
		want int // -1: nil error
	}{
		{code(0), nil, -1},
		{code(3), nil, 3},
		{nil, sig("SIGKILL"), 137},
		{nil, sig("TERM"), 143},
		{nil, sig("2"), 130},
	}
	for _, tt := range tests {
		err := exitStatus(tt.code, tt.sig)
		got := -1
		if err != nil {
			got = ExitCode(err)
		}
		if got != tt.want {
			t.Errorf("exitStatus(%v, %v) = %d; want %d", tt.code, tt.sig, got, tt.want)
		}
	}
}
