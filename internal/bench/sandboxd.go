package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/corral-sh/corral/api/sandboxapi"
	"github.com/corral-sh/corral/client"
)

// SandboxdOptions configure RunSandboxd.
type SandboxdOptions struct {
	// Binary is the corral binary to start as `corral sandboxd`.
	Binary string
	// Quick shrinks sample counts and sizes, for a smoke run in tests.
	Quick bool
}

// Anchors measured on the same kind of 2-core machine (DESIGN.md §7).
const (
	e2bExecP50MS, daytonaExecP50MS = 4.05, 4.17
	e2bRPS, daytonaRPS             = 515, 473
	e2bUpMS, daytonaUpMS           = 69, 391
	e2bDownMS, daytonaDownMS       = 34, 23
)

// RunSandboxd starts a real sandbox daemon on loopback, measures it
// through the client SDK, and prints the report to w.
func RunSandboxd(ctx context.Context, w io.Writer, opts SandboxdOptions) error {
	d, err := startDaemon(ctx, opts.Binary)
	if err != nil {
		return err
	}
	defer d.stop()
	c := d.client
	r := &report{title: fmt.Sprintf("sandboxd benchmark (loopback TCP, keep-alive; daemon pid %d)", d.cmd.Process.Pid)}

	// Memory first, before large transfers grow the heap.
	idle, _ := rssOf(d.cmd.Process.Pid)
	busy, err := rssWith(ctx, c, d.cmd.Process.Pid, 100)
	if err != nil {
		return fmt.Errorf("rss: %w", err)
	}
	n := map[bool]int{false: 2000, true: 100}[opts.Quick]
	lat, err := execLatency(ctx, c, n)
	if err != nil {
		return fmt.Errorf("exec latency: %w", err)
	}
	p50, p99 := lat.pct(50), lat.pct(99)
	r.add("exec `true` p50", ms(p50), speedup("E2B", e2bExecP50MS, msf(p50))+", "+speedup("Daytona", daytonaExecP50MS, msf(p50)), "<= 1.5 ms", msf(p50) <= 1.5)
	r.add("exec `true` p99", ms(p99), "", "", true)

	dur := map[bool]time.Duration{false: 5 * time.Second, true: 500 * time.Millisecond}[opts.Quick]
	rps, err := execThroughput(ctx, c, 8, dur)
	if err != nil {
		return fmt.Errorf("exec throughput: %w", err)
	}
	r.add("exec `true` throughput, 8 clients", fmt.Sprintf("%.0f req/s", rps),
		fmt.Sprintf("E2B %d (%.1fx), Daytona %d (%.1fx)", e2bRPS, rps/e2bRPS, daytonaRPS, rps/daytonaRPS), ">= 1500 req/s", rps >= 1500)

	echo, err := ptyEcho(ctx, c, map[bool]int{false: 1000, true: 50}[opts.Quick])
	if err != nil {
		return fmt.Errorf("pty echo: %w", err)
	}
	r.add("PTY keystroke -> echo p50", ms(echo.pct(50)), "p99 "+ms(echo.pct(99)), "<= 1 ms", msf(echo.pct(50)) <= 1)

	size := int64(map[bool]int{false: 256 << 20, true: 16 << 20}[opts.Quick])
	mbps, lost, err := catThroughput(ctx, c, size)
	if err != nil {
		return fmt.Errorf("cat throughput: %w", err)
	}
	r.add(fmt.Sprintf("cat %d MiB through one WebSocket", size>>20), fmt.Sprintf("%.0f MB/s", mbps),
		fmt.Sprintf("bytes lost to slow reading: %d", lost), ">= 300 MB/s", mbps >= 300 && lost == 0)

	fsize := int64(map[bool]int{false: 64 << 20, true: 8 << 20}[opts.Quick])
	up, down, err := fileTransfer(ctx, c, fsize, map[bool]int{false: 7, true: 2}[opts.Quick])
	if err != nil {
		return fmt.Errorf("file transfer: %w", err)
	}
	r.add(fmt.Sprintf("upload %d MiB (median)", fsize>>20), ms(up), speedup("E2B", e2bUpMS, msf(up))+", "+speedup("Daytona", daytonaUpMS, msf(up)), "<= 60 ms", msf(up) <= 60)
	r.add(fmt.Sprintf("download %d MiB (median)", fsize>>20), ms(down), speedup("E2B", e2bDownMS, msf(down))+", "+speedup("Daytona", daytonaDownMS, msf(down)), "<= 20 ms", msf(down) <= 20)
	floor, err := tcpFloor(filepath.Join(d.dir, "big.bin"), map[bool]int{false: 7, true: 2}[opts.Quick])
	if err != nil {
		return fmt.Errorf("tcp floor: %w", err)
	}
	r.add(fmt.Sprintf("  floor: raw loopback TCP sendfile %d MiB", fsize>>20), ms(floor),
		fmt.Sprintf("download / floor = %.2f", msf(down)/msf(floor)), "", true)

	r.add("daemon RSS idle", mib(idle), "", "<= 15 MiB", idle <= 15<<20)
	r.add("daemon RSS with 100 processes", mib(busy), "", "", true)
	r.print(w)
	return nil
}

func msf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
func mib(b int64) string          { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

type daemon struct {
	cmd    *exec.Cmd
	dir    string
	client *client.Client
}

func startDaemon(ctx context.Context, binary string) (*daemon, error) {
	dir, err := os.MkdirTemp("", "corral-bench-")
	if err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	cmd := exec.Command(binary, "sandboxd", "--listen", addr, "--root", dir, "--log-level", "warn")
	cmd.Env = append(os.Environ(), "CORRAL_SANDBOX_TOKEN=bench-token")
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s sandboxd: %w", binary, err)
	}
	d := &daemon{cmd: cmd, dir: dir}
	d.client, err = client.New("http://"+addr, client.WithToken("bench-token"))
	if err != nil {
		d.stop()
		return nil, err
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := d.client.Health(ctx); err == nil {
			return d, nil
		}
		if time.Now().After(deadline) {
			d.stop()
			return nil, errors.New("sandboxd did not become healthy in 10s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (d *daemon) stop() {
	_ = d.cmd.Process.Signal(os.Interrupt)
	done := make(chan struct{})
	go func() { _ = d.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = d.cmd.Process.Kill()
		<-done
	}
	os.RemoveAll(d.dir)
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

func execTrue(ctx context.Context, c *client.Client) error {
	res, err := c.Exec(ctx, sandboxapi.ExecRequest{Command: "true"})
	if err != nil {
		return err
	}
	if res.ExitCode == nil || *res.ExitCode != 0 {
		return fmt.Errorf("true exited %v", res.ExitCode)
	}
	return nil
}

func execLatency(ctx context.Context, c *client.Client, n int) (durations, error) {
	for i := 0; i < 50; i++ { // warm up connections and caches
		if err := execTrue(ctx, c); err != nil {
			return nil, err
		}
	}
	out := make(durations, 0, n)
	for i := 0; i < n; i++ {
		t := time.Now()
		if err := execTrue(ctx, c); err != nil {
			return nil, err
		}
		out = append(out, time.Since(t))
	}
	return out, nil
}

func execThroughput(ctx context.Context, c *client.Client, clients int, d time.Duration) (float64, error) {
	var done atomic.Int64
	var firstErr error
	var once sync.Once
	stop := time.Now().Add(d)
	var wg sync.WaitGroup
	for i := 0; i < clients; i++ {
		wg.Go(func() {
			for time.Now().Before(stop) {
				if err := execTrue(ctx, c); err != nil {
					once.Do(func() { firstErr = err })
					return
				}
				done.Add(1)
			}
		})
	}
	start := time.Now()
	wg.Wait()
	return float64(done.Load()) / time.Since(start).Seconds(), firstErr
}

// ptyEcho types one key at a time into a shell's terminal and times until
// its echo comes back over the WebSocket.
func ptyEcho(ctx context.Context, c *client.Client, n int) (durations, error) {
	p, err := c.Spawn(ctx, sandboxapi.SpawnRequest{Command: "cat", PTY: &sandboxapi.PTYSize{Rows: 24, Cols: 80}})
	if err != nil {
		return nil, err
	}
	defer c.DeleteProcess(context.WithoutCancel(ctx), p.ID)
	s, err := c.Connect(ctx, p.ID, client.ConnectOptions{Offset: client.OffsetOldest})
	if err != nil {
		return nil, err
	}
	defer s.Close()
	keys := []byte("abcdefghijklmnopqrstuvwxyz")
	out := make(durations, 0, n)
	for i := 0; i < n+20; i++ {
		k := keys[i%len(keys)]
		if i%60 == 59 {
			k = '\n' // keep the line short; the echo of \n is \r\n
		}
		t := time.Now()
		if _, err := s.Write([]byte{k}); err != nil {
			return nil, err
		}
		for got := false; !got; {
			ev, err := s.Next(ctx)
			if err != nil {
				return nil, err
			}
			got = bytes.IndexByte(ev.Data, k) >= 0
		}
		if i >= 20 { // the first keys warm up
			out = append(out, time.Since(t))
		}
	}
	return out, nil
}

// catThroughput streams size bytes of output through one WebSocket. The
// process waits for a line on stdin so the clock starts with the client
// attached. The producer (/dev/zero) is far faster than any socket and
// sandboxd never slows a process for its readers, so the window is as
// large as the output: the figure is the delivery rate with nothing lost.
// Any loss is still counted and reported.
func catThroughput(ctx context.Context, c *client.Client, size int64) (mbps float64, lost int64, err error) {
	p, err := c.Spawn(ctx, sandboxapi.SpawnRequest{Command: "sh", Stdin: true, BufferBytes: size,
		Args: []string{"-c", fmt.Sprintf("read go; exec head -c %d /dev/zero", size)}})
	if err != nil {
		return 0, 0, err
	}
	defer c.DeleteProcess(context.WithoutCancel(ctx), p.ID)
	s, err := c.Connect(ctx, p.ID, client.ConnectOptions{Offset: 0})
	if err != nil {
		return 0, 0, err
	}
	defer s.Close()
	start := time.Now()
	if _, err := s.Write([]byte("go\n")); err != nil {
		return 0, 0, err
	}
	var got int64
	for {
		ev, err := s.Next(ctx)
		if err != nil {
			return 0, 0, err
		}
		if ev.Truncated != nil {
			lost += ev.Truncated.From - (got + lost)
		}
		got += int64(len(ev.Data))
		if ev.Exit != nil {
			break
		}
	}
	el := time.Since(start)
	if got+lost != size {
		return 0, 0, fmt.Errorf("received %d bytes and lost %d; want %d", got, lost, size)
	}
	return float64(got) / el.Seconds() / 1e6, lost, nil
}

func fileTransfer(ctx context.Context, c *client.Client, size int64, rounds int) (up, down time.Duration, err error) {
	data := bytes.Repeat([]byte("corral-bench-data"), int(size/17)+1)[:size]
	var ups, downs durations
	buf := make([]byte, 1<<20) // read as a downloader writing to disk would
	for i := 0; i < rounds; i++ {
		t := time.Now()
		if _, err := c.WriteFile(ctx, "/big.bin", bytes.NewReader(data), 0o644); err != nil {
			return 0, 0, err
		}
		ups = append(ups, time.Since(t))
		t = time.Now()
		rc, err := c.ReadFile(ctx, "/big.bin")
		if err != nil {
			return 0, 0, err
		}
		n, err := io.CopyBuffer(sink{}, rc, buf)
		rc.Close()
		if err != nil || n != size {
			return 0, 0, fmt.Errorf("downloaded %d of %d bytes: %v", n, size, err)
		}
		downs = append(downs, time.Since(t))
	}
	return ups.pct(50), downs.pct(50), nil
}

// sink discards writes; unlike io.Discard it has no ReadFrom, so
// io.CopyBuffer really uses the caller's buffer.
type sink struct{}

func (sink) Write(p []byte) (int, error) { return len(p), nil }

func rssWith(ctx context.Context, c *client.Client, pid, n int) (int64, error) {
	var ids []string
	defer func() {
		for _, id := range ids {
			_ = c.DeleteProcess(context.WithoutCancel(ctx), id)
		}
	}()
	for i := 0; i < n; i++ {
		p, err := c.Spawn(ctx, sandboxapi.SpawnRequest{Command: "sleep", Args: []string{"600"}})
		if err != nil {
			return 0, err
		}
		ids = append(ids, p.ID)
	}
	return rssOf(pid)
}

// rssOf reads a process's resident set size from /proc.
func rssOf(pid int) (int64, error) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10, err
		}
	}
	return 0, errors.New("no VmRSS in /proc status")
}
