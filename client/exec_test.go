package client_test

import (
	"testing"
	"time"

	"github.com/corral-sh/corral/api/sandboxapi"
)

func TestExec(t *testing.T) {
	stdin := "from stdin"
	tests := []struct {
		name         string
		req          sandboxapi.ExecRequest
		wantCode     int
		wantStdout   string
		wantStderr   string
		wantTimedOut bool
	}{
		{"true", sandboxapi.ExecRequest{Command: "true"}, 0, "", "", false},
		{"args", sandboxapi.ExecRequest{Command: "echo", Args: []string{"a b", "c"}}, 0, "a b c\n", "", false},
		{"shell and exit code", sandboxapi.ExecRequest{Command: "echo out; echo err >&2; exit 3", Shell: true}, 3, "out\n", "err\n", false},
		{"env and cwd", sandboxapi.ExecRequest{Command: "echo $X; pwd", Shell: true, Env: map[string]string{"X": "y"}, Cwd: "/"}, 0, "y\n/\n", "", false},
		{"stdin", sandboxapi.ExecRequest{Command: "cat", Stdin: &stdin}, 0, stdin, "", false},
		{"timeout", sandboxapi.ExecRequest{Command: "echo started; sleep 10", Shell: true, TimeoutMS: 300}, -1, "started\n", "", true},
	}
	forEachTransport(t, func(t *testing.T, d *daemon) {
		ctx := testContext(t, 20*time.Second)
		for _, tt := range tests {
			res, err := d.c.Exec(ctx, tt.req)
			if err != nil {
				t.Errorf("Exec(%s): %v", tt.name, err)
				continue
			}
			check := func(form string, code *int, timedOut bool, stdout, stderr string) {
				if tt.wantCode >= 0 && (code == nil || *code != tt.wantCode) {
					t.Errorf("%s(%s) exit code = %v; want %d", form, tt.name, code, tt.wantCode)
				}
				if timedOut != tt.wantTimedOut {
					t.Errorf("%s(%s) timed out = %v; want %v", form, tt.name, timedOut, tt.wantTimedOut)
				}
				if stdout != tt.wantStdout || stderr != tt.wantStderr {
					t.Errorf("%s(%s) = stdout %q, stderr %q; want %q, %q", form, tt.name, stdout, stderr, tt.wantStdout, tt.wantStderr)
				}
			}
			check("Exec", res.ExitCode, res.TimedOut, res.Stdout, res.Stderr)

			var stdout, stderr []byte
			res, err = d.c.ExecStream(ctx, tt.req, func(stream string, data []byte) {
				switch stream {
				case sandboxapi.ExecEventStdout:
					stdout = append(stdout, data...)
				case sandboxapi.ExecEventStderr:
					stderr = append(stderr, data...)
				default:
					t.Errorf("ExecStream(%s): chunk of stream %q", tt.name, stream)
				}
			})
			if err != nil {
				t.Errorf("ExecStream(%s): %v", tt.name, err)
				continue
			}
			check("ExecStream", res.ExitCode, res.TimedOut, string(stdout), string(stderr))
		}
	})
}

// TestExecStreamLive checks that chunks arrive while the command runs, not
// at its end.
func TestExecStreamLive(t *testing.T) {
	forEachTransport(t, func(t *testing.T, d *daemon) {
		ctx := testContext(t, 10*time.Second)
		start := time.Now()
		var firstAt time.Duration
		res, err := d.c.ExecStream(ctx, sandboxapi.ExecRequest{Command: "echo now; sleep 1; echo later", Shell: true},
			func(_ string, data []byte) {
				if firstAt == 0 {
					firstAt = time.Since(start)
				}
			})
		if err != nil {
			t.Fatalf("ExecStream: %v", err)
		}
		total := time.Since(start)
		if firstAt == 0 || firstAt > total-500*time.Millisecond {
			t.Errorf("first chunk after %v of %v; want it well before the end", firstAt, total)
		}
		if res.ExitCode == nil || *res.ExitCode != 0 {
			t.Errorf("exit code = %v; want 0", res.ExitCode)
		}
	})
}
