package gitops

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// How credentials reach git. The daemon runs git with GIT_ASKPASS set to
// its own executable and AskpassSocketEnv naming a unix socket in a fresh
// 0700 directory under the temporary directory (never the workspace). Git
// runs the askpass program with its prompt as the only argument
// ("Password for 'https://user@host': "); the program (Askpass, called
// first thing by the corral command line) sends the prompt over the socket
// and prints the answer for git to read from its stdout. So the secret
// exists only in the daemon's memory, on that socket and in git's memory:
// never in an argument list, an environment, a file or a configuration.
//
// The daemon answers only while its git command runs, only to a process
// whose ancestry leads to that git process (SO_PEERCRED, then /proc), a
// few times, and only for prompts naming the scheme and host of the URL
// the credentials were given for — so a remote rewritten by the
// repository's configuration (url.<base>.insteadOf) gets nothing. The
// socket and its directory are removed when the command ends.
//
// Against a hostile process of the same user that can ptrace git, nothing
// in the sandbox is secret; this design keeps the token out of every place
// such a process could read without that.

// AskpassSocketEnv names the variable that carries the askpass socket's
// path to the askpass program.
const AskpassSocketEnv = "CORRAL_ASKPASS_SOCKET"

const (
	// maxAnswers bounds the prompts answered for one command: git asks
	// for a user name and a password once per authentication.
	maxAnswers = 4
	// askpassIO bounds one exchange on the socket.
	askpassIO = 10 * time.Second
	// maxPrompt bounds a prompt (and an answer) on the socket.
	maxPrompt = 8 << 10
)

// askpass serves one git command's credential prompts.
type askpass struct {
	dir     string
	socket  string
	ln      *net.UnixListener
	creds   *creds
	log     *slog.Logger
	pid     chan int // receives git's pid once it has started
	gitPID  int      // set from pid by the serving goroutine
	done    sync.WaitGroup
	answers int
}

// startAskpass listens on a fresh socket for c's prompts. The caller
// starts git with env(), passes its pid to started and closes the askpass
// when git has exited.
func startAskpass(tmp string, c *creds, log *slog.Logger) (*askpass, error) {
	dir, err := os.MkdirTemp(tmp, "corral-askpass-")
	if err != nil {
		return nil, fmt.Errorf("gitops: askpass directory: %w", err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("gitops: askpass directory: %w", err)
	}
	a := &askpass{dir: dir, socket: filepath.Join(dir, "s"), creds: c, log: log, pid: make(chan int, 1)}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: a.socket, Net: "unix"})
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("gitops: askpass socket: %w", err)
	}
	a.ln = ln
	a.done.Go(a.serve)
	return a, nil
}

// env is what git needs to find the askpass program and its socket.
func (a *askpass) env(program string) []string {
	return []string{"GIT_ASKPASS=" + program, AskpassSocketEnv + "=" + a.socket}
}

// started records git's pid: only its descendants are answered.
func (a *askpass) started(pid int) { a.pid <- pid }

// close stops answering and removes the socket and its directory.
func (a *askpass) close() {
	a.ln.Close()
	a.done.Wait()
	os.RemoveAll(a.dir)
}

// serve answers connections one at a time until the listener closes. Git
// asks one prompt at a time, so nothing waits behind a slow exchange for
// longer than askpassIO.
func (a *askpass) serve() {
	for {
		conn, err := a.ln.AcceptUnix()
		if err != nil {
			return
		}
		if err := a.answer(conn); err != nil {
			a.log.Warn("git askpass: prompt refused", "err", err)
			_, _ = io.WriteString(conn, "-"+err.Error()+"\n")
		}
		conn.Close()
	}
}

// answer checks who is asking and what, and writes the answer.
func (a *askpass) answer(conn *net.UnixConn) error {
	_ = conn.SetDeadline(time.Now().Add(askpassIO))
	if a.gitPID == 0 {
		select {
		case a.gitPID = <-a.pid:
		case <-time.After(askpassIO):
			return errors.New("git did not start")
		}
	}
	if err := a.checkPeer(conn); err != nil {
		return err
	}
	line, err := bufio.NewReader(io.LimitReader(conn, maxPrompt)).ReadString('\n')
	if err != nil {
		return fmt.Errorf("reading the prompt: %w", err)
	}
	if a.answers++; a.answers > maxAnswers {
		return errors.New("too many prompts")
	}
	kind, target, ok := parsePrompt(strings.TrimSuffix(line, "\n"))
	if !ok {
		return fmt.Errorf("not a credential prompt: %q", redactURL(line))
	}
	if target.scheme != a.creds.remote.scheme || target.host != a.creds.remote.host {
		return fmt.Errorf("credentials are for %s://%s, not for %s://%s",
			a.creds.remote.scheme, a.creds.remote.host, target.scheme, target.host)
	}
	value := a.creds.password
	if kind == "Username" {
		value = a.creds.username
	}
	_, err = io.WriteString(conn, "+"+value+"\n")
	return err
}

// checkPeer accepts only the connecting process's being of our user and a
// descendant of the git process (git runs the askpass program from a
// helper such as git-remote-https).
func (a *askpass) checkPeer(conn *net.UnixConn) error {
	raw, err := conn.SyscallConn()
	if err != nil {
		return err
	}
	var cred *unix.Ucred
	var cerr error
	if err := raw.Control(func(fd uintptr) {
		cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return err
	}
	if cerr != nil {
		return fmt.Errorf("peer credentials: %w", cerr)
	}
	if int(cred.Uid) != os.Getuid() {
		return fmt.Errorf("peer uid %d is not ours", cred.Uid)
	}
	pid := int(cred.Pid)
	for range 16 {
		if pid == a.gitPID {
			return nil
		}
		if pid <= 1 || pid == os.Getpid() {
			break
		}
		if pid = parentPID(pid); pid == 0 {
			break
		}
	}
	return fmt.Errorf("pid %d is not run by the git command", cred.Pid)
}

// parentPID reads a process's parent from /proc/<pid>/stat (0 if gone).
// The command name may hold spaces and parentheses: parse after the last
// ')'.
func parentPID(pid int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:]) // state ppid ...
	if len(f) < 2 {
		return 0
	}
	pp, _ := strconv.Atoi(f[1])
	return pp
}

// parsePrompt recognises git's credential prompts, "Username for
// '<url>': " and "Password for '<url>': ", and returns the kind and the
// remote named.
func parsePrompt(p string) (kind string, target remote, ok bool) {
	for _, k := range []string{"Username", "Password"} {
		rest, found := strings.CutPrefix(p, k+" for '")
		if !found {
			continue
		}
		raw, found := strings.CutSuffix(rest, "': ")
		if !found {
			return "", remote{}, false
		}
		u, err := url.Parse(raw)
		if err != nil || u.Host == "" {
			return "", remote{}, false
		}
		return k, remote{scheme: strings.ToLower(u.Scheme), host: normalHost(u)}, true
	}
	return "", remote{}, false
}

// Askpass is the askpass program's side, run by the corral binary (and by
// test binaries standing in for it) before anything else. It acts only
// when AskpassSocketEnv is set and args is exactly one git credential
// prompt; otherwise handled is false and the caller goes on as usual. It
// sends the prompt to the daemon and writes the answer, followed by a
// newline, to stdout.
func Askpass(args []string, stdout io.Writer) (handled bool, err error) {
	socket := os.Getenv(AskpassSocketEnv)
	if socket == "" || len(args) != 1 {
		return false, nil
	}
	if _, _, ok := parsePrompt(args[0]); !ok {
		return false, nil
	}
	conn, err := net.DialTimeout("unix", socket, askpassIO)
	if err != nil {
		return true, fmt.Errorf("askpass: %w", err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(askpassIO))
	if _, err := io.WriteString(conn, args[0]+"\n"); err != nil {
		return true, fmt.Errorf("askpass: %w", err)
	}
	reply, err := bufio.NewReader(io.LimitReader(conn, maxPrompt)).ReadString('\n')
	if err != nil {
		return true, fmt.Errorf("askpass: no answer: %w", err)
	}
	reply = strings.TrimSuffix(reply, "\n")
	if answer, ok := strings.CutPrefix(reply, "+"); ok {
		_, err := io.WriteString(stdout, answer+"\n")
		return true, err
	}
	return true, fmt.Errorf("askpass: refused: %s", strings.TrimPrefix(reply, "-"))
}
