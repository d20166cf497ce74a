package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"
	"golang.org/x/term"

	"github.com/corral-sh/corral/api/sandboxapi"
	"github.com/corral-sh/corral/client"
)

const defaultDetachKeys = "ctrl-p,ctrl-q"

func attachCmd() *cobra.Command {
	var (
		sf         sandboxFlags
		detachKeys string
		noReplay   bool
	)
	cmd := &cobra.Command{
		Use:   "attach [flags] <process id or tag>",
		Short: "Attach this terminal to a process in a sandbox",
		Long: `attach connects the terminal to a sandbox process: its output (the scrollback
the daemon retains first, then live) goes to stdout and stderr, and what you
type goes to the process. For a PTY process the terminal is put in raw mode
and its size follows this window.

The connection survives drops: attach reconnects from the last byte it saw,
so nothing the daemon still retains is lost. The detach keys (default
ctrl-p,ctrl-q; "" disables them) leave the process running. When the process
exits, attach exits with its exit code.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			keys, err := parseDetachKeys(detachKeys)
			if err != nil {
				return err
			}
			c, err := sf.client()
			if err != nil {
				return err
			}
			return attach(cmd.Context(), c, args[0], attachOptions{
				detachKeys: keys,
				replay:     !noReplay,
				stdin:      cmd.InOrStdin(),
				stdout:     cmd.OutOrStdout(),
				stderr:     cmd.ErrOrStderr(),
			})
		},
	}
	sf.register(cmd)
	cmd.Flags().StringVar(&detachKeys, "detach-keys", defaultDetachKeys, `key sequence that detaches: comma-separated "ctrl-<key>" or single characters`)
	cmd.Flags().BoolVar(&noReplay, "no-replay", false, "show only new output, not the retained scrollback")
	return cmd
}

type attachOptions struct {
	detachKeys []byte // nil: never detach
	replay     bool   // start from the oldest retained output, not from now
	stdin      io.Reader
	stdout     io.Writer
	stderr     io.Writer
	detachHint string // said after "detached", when set
}

// attach runs one attach session. It returns nil on detach, an *ExitError
// (or nil for 0) when the process exits, and other errors as they come.
//
// Goroutines: the resize watcher stops when attach returns. The stdin
// reader cannot interrupt a blocked read of stdin: it stops at EOF, at the
// detach keys, or at its next read after attach returns; the stdin writer
// stops after it.
func attach(ctx context.Context, c *client.Client, ref string, o attachOptions) error {
	p, err := c.GetProcess(ctx, ref)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	offset := int64(client.OffsetOldest)
	if !o.replay {
		offset = p.OutputBytes
	}
	st, err := c.Connect(ctx, p.ID, client.ConnectOptions{Offset: offset, Reconnect: true})
	if err != nil {
		return err
	}
	defer st.Close()

	restore, newline := func() {}, "\n"
	if fd, ok := terminalFD(o.stdin); ok && p.PTY {
		state, err := term.MakeRaw(fd)
		if err != nil {
			return fmt.Errorf("terminal raw mode: %w", err)
		}
		restore = sync.OnceFunc(func() { _ = term.Restore(fd, state) })
		newline = "\r\n" // raw mode: no output processing
		defer restore()
	}

	if fd, ok := terminalFD(o.stdin, o.stdout); ok && p.PTY {
		var wg sync.WaitGroup
		defer wg.Wait()
		defer cancel()
		wg.Go(func() { followSize(ctx, st, fd) })
	}

	// outCtx ends when the detach keys are typed, ending the output loop.
	outCtx, detach := context.WithCancel(ctx)
	defer detach()
	var detached atomic.Bool
	// Input: one goroutine reads stdin and watches for the detach keys,
	// another writes to the stream, so a write held up while the stream
	// reconnects never keeps the detach keys from being seen.
	input := make(chan []byte, 256)
	go readInput(ctx, o.stdin, o.detachKeys, input, func() {
		detached.Store(true)
		detach()
	})
	go func() {
		failed := false
		for b := range input {
			if !failed {
				_, err := st.Write(b)
				failed = err != nil // keep draining, so readInput never blocks
			}
		}
		if !p.PTY && !failed && !detached.Load() { // stdin ended: pass the EOF on
			_ = st.CloseStdin(ctx)
		}
	}()

	for {
		ev, err := st.Next(outCtx)
		if err != nil {
			if detached.Load() {
				restore()
				fmt.Fprintln(o.stderr, "\ndetached")
				if o.detachHint != "" {
					fmt.Fprintln(o.stderr, o.detachHint)
				}
				return nil
			}
			return err
		}
		switch {
		case ev.Exit != nil:
			restore()
			return exitStatus(ev.Exit.ExitCode, ev.Exit.Signal)
		case ev.Truncated != nil:
			continue
		case ev.Refused != "":
			_, err = fmt.Fprintf(o.stderr, "corral: %s%s", ev.Refused, newline)
		case ev.Stream == sandboxapi.StreamStderr:
			_, err = o.stderr.Write(ev.Data)
		default:
			_, err = o.stdout.Write(ev.Data)
		}
		if err != nil {
			return fmt.Errorf("write output: %w", err)
		}
	}
}

// terminalFD returns the descriptor of the first of files that is a
// terminal.
func terminalFD(files ...any) (int, bool) {
	for _, f := range files {
		if f, ok := f.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
			return int(f.Fd()), true
		}
	}
	return -1, false
}

// followSize sends the size of the terminal fd now and on every SIGWINCH,
// until ctx ends.
func followSize(ctx context.Context, st *client.Stream, fd int) {
	winch := make(chan os.Signal, 1)
	signal.Notify(winch, syscall.SIGWINCH)
	defer signal.Stop(winch)
	for {
		if cols, rows, err := term.GetSize(fd); err == nil {
			_ = st.Resize(ctx, rows, cols)
		}
		select {
		case <-ctx.Done():
			return
		case <-winch:
		}
	}
}

// readInput reads in until EOF, an error, the detach keys or the end of
// ctx (noticed after a read returns), sending what it reads (minus the
// keys) to out, which it closes when it stops. It calls onDetach when the
// keys are typed.
func readInput(ctx context.Context, in io.Reader, keys []byte, out chan<- []byte, onDetach func()) {
	defer close(out)
	d := detector{keys: keys}
	buf := make([]byte, 32<<10)
	for {
		n, err := in.Read(buf)
		if ctx.Err() != nil {
			return
		}
		if n > 0 {
			pass, hit := d.filter(buf[:n])
			if len(pass) > 0 {
				select {
				case out <- append([]byte(nil), pass...):
				case <-ctx.Done():
					return
				}
			}
			if hit {
				onDetach()
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// detector finds a key sequence in typed input. Keys that may start the
// sequence are held back until it completes (they are swallowed) or breaks
// (they are passed on), as docker attach does.
type detector struct {
	keys    []byte
	matched int // how many of keys the held input matches
}

// filter returns the input to pass on and whether the sequence completed;
// input after the sequence is dropped.
func (d *detector) filter(p []byte) (out []byte, hit bool) {
	if len(d.keys) == 0 {
		return p, false
	}
	out = make([]byte, 0, len(p)+d.matched)
	for _, b := range p {
		if b != d.keys[d.matched] && d.matched > 0 {
			out = append(out, d.keys[:d.matched]...)
			d.matched = 0
		}
		if b != d.keys[d.matched] {
			out = append(out, b)
			continue
		}
		d.matched++
		if d.matched == len(d.keys) {
			d.matched = 0
			return out, true
		}
	}
	return out, false
}

// parseDetachKeys parses docker's --detach-keys syntax: comma-separated
// keys, each a single character or "ctrl-" and one of a-z @ [ \ ] ^ _.
// The empty string means no detach keys.
func parseDetachKeys(s string) ([]byte, error) {
	if s == "" {
		return nil, nil
	}
	var keys []byte
	for k := range strings.SplitSeq(s, ",") {
		switch {
		case len(k) == 1:
			keys = append(keys, k[0])
		case len(k) == 6 && strings.EqualFold(k[:5], "ctrl-"):
			c := k[5]
			switch {
			case c >= 'a' && c <= 'z':
				keys = append(keys, c-'a'+1)
			case c >= 'A' && c <= 'Z':
				keys = append(keys, c-'A'+1)
			case strings.IndexByte("@[\\]^_", c) >= 0:
				keys = append(keys, c-'@') // ctrl-@ is 0, ctrl-_ is 31
			default:
				return nil, fmt.Errorf("--detach-keys %q: unknown key %q", s, k)
			}
		default:
			return nil, fmt.Errorf("--detach-keys %q: unknown key %q", s, k)
		}
	}
	return keys, nil
}

// exitStatus turns a remote process's end into this command's: nil for
// exit 0, ExitError with the code, or 128+n for a death by signal n, as a
// shell reports it.
func exitStatus(code *int, sig *string) error {
	switch {
	case code != nil && *code == 0:
		return nil
	case code != nil:
		return &ExitError{Code: *code}
	case sig != nil:
		return &ExitError{Code: 128 + signalNumber(*sig)}
	}
	return errors.New("process ended without an exit status")
}

// signalNumber reads a signal as the daemon reports it: "SIGKILL", "KILL"
// or "9". Unknown names count as 0.
func signalNumber(sig string) int {
	if n, err := strconv.Atoi(sig); err == nil {
		return n
	}
	name := strings.ToUpper(sig)
	if !strings.HasPrefix(name, "SIG") {
		name = "SIG" + name
	}
	return int(unix.SignalNum(name))
}
