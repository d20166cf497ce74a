package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/corral-sh/corral/api/cpapi"
	"github.com/corral-sh/corral/client"
	"github.com/corral-sh/corral/internal/controlplane"
	"github.com/corral-sh/corral/internal/runtime/catalog"
	"github.com/corral-sh/corral/internal/store"
	"github.com/corral-sh/corral/internal/template"
)

// ControlPlaneOptions configure RunControlPlane.
type ControlPlaneOptions struct {
	Binary   string // static corral binary the sandboxes mount
	Postgres string // DSN for the PostgreSQL event figures; skipped when ""
	Quick    bool
}

// RunControlPlane measures a real control plane (bwrap sandboxes, SQLite)
// served on loopback: job start latency with and without a warm pool,
// end-to-end job throughput, event append rates, SSE fan-out, and what the
// sandbox proxy adds to an exec.
func RunControlPlane(ctx context.Context, w io.Writer, opts ControlPlaneOptions) error {
	root, err := os.MkdirTemp("", "corral-bench-cp-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(root)
	_ = os.Chmod(root, 0o755)
	stateRoot := filepath.Join(root, "state")
	rt, err := catalog.Open(ctx, "bwrap", catalog.Config{Binary: opts.Binary, StateRoot: stateRoot})
	if err != nil {
		return err
	}
	def, _ := template.Lookup("minimal")
	err = template.Ensure(ctx, rt.(template.Importer), def.Name, template.Options{})
	_ = catalog.Close(rt)
	if err != nil {
		return err
	}
	n := map[bool]int{false: 30, true: 5}[opts.Quick]
	r := &report{title: "control plane benchmark (bwrap sandboxes, SQLite store, loopback HTTP)"}

	for _, poolSize := range []int{0, 2} {
		cp, err := startCP(ctx, opts.Binary, filepath.Join(root, fmt.Sprint("data", poolSize)), stateRoot, poolSize, def.Ref())
		if err != nil {
			return err
		}
		lat, err := jobStartLatency(ctx, cp, def.Ref(), n, poolSize > 0)
		if err != nil {
			cp.stop()
			return fmt.Errorf("job start latency: %w", err)
		}
		name, goal := "POST /v1/jobs → running, cold sandbox", ""
		ok := true
		if poolSize > 0 {
			name, goal, ok = "POST /v1/jobs → running, warm pool", "<= 50 ms", msf(lat.pct(50)) <= 50
		}
		r.add(name+" p50", ms(lat.pct(50)), "p95 "+ms(lat.pct(95)), goal, ok)
		if poolSize == 0 {
			if err := cpThroughputAndProxy(ctx, r, cp, def.Ref(), stateRoot, map[bool]int{false: 60, true: 10}[opts.Quick]); err != nil {
				cp.stop()
				return err
			}
			if err := fanOut(ctx, r, cp, def.Ref(), map[bool]int{false: 1000, true: 100}[opts.Quick]); err != nil {
				cp.stop()
				return fmt.Errorf("fan-out: %w", err)
			}
		}
		cp.stop()
	}
	for _, db := range []struct{ name, url string }{{"SQLite", "sqlite:" + filepath.Join(root, "events.db")}, {"PostgreSQL", opts.Postgres}} {
		if db.url == "" {
			r.add("events appended/s, "+db.name, "skipped", "no database given", "", true)
			continue
		}
		rate, err := appendRate(ctx, db.url)
		if err != nil {
			return fmt.Errorf("append rate %s: %w", db.name, err)
		}
		r.add("events appended/s, "+db.name+" (batches of 100)", fmt.Sprintf("%.0f /s", rate), "", ">= 10000 /s", rate >= 10000)
	}
	r.print(w)
	return nil
}

type cpServer struct {
	url, token string
	stop       func()
}

func startCP(ctx context.Context, binary, dataDir, stateRoot string, poolSize int, tpl string) (*cpServer, error) {
	const token = "crl_bench_admin_token_0123456789"
	srv, err := controlplane.New(ctx, controlplane.Config{
		Listen: "127.0.0.1:0", DataDir: dataDir, Runtime: "bwrap", StateRoot: stateRoot, Binary: binary,
		AdminToken: token, ConfigPath: filepath.Join(dataDir, "cli.json"), Workers: 8,
		PoolSize: poolSize, PoolTemplate: tpl, RateLimit: -1, Out: io.Discard,
		Log: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})),
	})
	if err != nil {
		return nil, err
	}
	ln, err := controlplane.Listen("127.0.0.1:0")
	if err != nil {
		srv.Close()
		return nil, err
	}
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { _ = srv.Run(rctx, ln); close(done) }()
	return &cpServer{url: "http://" + ln.Addr().String(), token: token, stop: func() { cancel(); <-done; srv.Close() }}, nil
}

func (c *cpServer) do(ctx context.Context, method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequestWithContext(ctx, method, c.url+path, rd)
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Accept", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 {
		b, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, b)
	}
	if out != nil {
		return json.NewDecoder(resp.Body).Decode(out)
	}
	return nil
}

// waitEvent reads the job's SSE stream until match holds for an event.
func (c *cpServer) waitEvent(ctx context.Context, id string, match func(cpapi.Event) bool) error {
	req, _ := http.NewRequestWithContext(ctx, "GET", c.url+"/v1/jobs/"+id+"/events", nil)
	req.Header.Set("Authorization", "Bearer "+c.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var e cpapi.Event
		if json.Unmarshal([]byte(data), &e) == nil && match(e) {
			return nil
		}
	}
	return fmt.Errorf("job %s: stream ended first", id)
}

func isState(to string) func(cpapi.Event) bool {
	return func(e cpapi.Event) bool {
		var st cpapi.StateData
		return e.Type == cpapi.EventJobState && json.Unmarshal(e.Data, &st) == nil && st.To == to
	}
}

func jobStartLatency(ctx context.Context, c *cpServer, tpl string, n int, warm bool) (durations, error) {
	var out durations
	for i := 0; i < n+2; i++ {
		if warm {
			time.Sleep(300 * time.Millisecond) // let the pool refill
		}
		t := time.Now()
		var j cpapi.Job
		req := cpapi.JobRequest{Agent: cpapi.AgentScript, Command: "true", Template: tpl}
		if err := c.do(ctx, "POST", "/v1/jobs", req, &j); err != nil {
			return nil, err
		}
		if err := c.waitEvent(ctx, j.ID, isState(cpapi.JobRunning)); err != nil {
			return nil, err
		}
		if i >= 2 {
			out = append(out, time.Since(t))
		}
	}
	return out, nil
}

// cpThroughputAndProxy measures jobs/s with `true`, then the proxy's
// added latency on /v1/exec against the sandbox's socket directly.
func cpThroughputAndProxy(ctx context.Context, r *report, c *cpServer, tpl, stateRoot string, jobs int) error {
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, jobs)
	for i := 0; i < jobs; i++ {
		wg.Go(func() {
			var j cpapi.Job
			if err := c.do(ctx, "POST", "/v1/jobs", cpapi.JobRequest{Agent: cpapi.AgentScript, Command: "true", Template: tpl}, &j); err != nil {
				errs <- err
				return
			}
			errs <- c.waitEvent(ctx, j.ID, isState(cpapi.JobCompleted))
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			return fmt.Errorf("throughput: %w", err)
		}
	}
	rate := float64(jobs) / time.Since(start).Seconds()
	r.add(fmt.Sprintf("jobs/s end to end (`true`, %d at once)", jobs), fmt.Sprintf("%.1f /s", rate), "create→run→pack→delete", "", true)

	var sb cpapi.Sandbox
	if err := c.do(ctx, "POST", "/v1/sandboxes", cpapi.SandboxRequest{Template: tpl}, &sb); err != nil {
		return err
	}
	defer c.do(context.WithoutCancel(ctx), "DELETE", "/v1/sandboxes/"+sb.ID, nil, nil)
	proxied, err := client.New(c.url+"/v1/sandboxes/"+sb.ID, client.WithToken(c.token))
	if err != nil {
		return err
	}
	tok, err := os.ReadFile(filepath.Join(stateRoot, "bwrap", sb.ID, "token"))
	if err != nil {
		return err
	}
	direct, err := client.New("unix:"+filepath.Join(stateRoot, "bwrap", sb.ID, "sock", "sandboxd.sock"), client.WithToken(string(tok)))
	if err != nil {
		return err
	}
	viaProxy, err := execLatency(ctx, proxied, 300)
	if err != nil {
		return err
	}
	viaSocket, err := execLatency(ctx, direct, 300)
	if err != nil {
		return err
	}
	added := viaProxy.pct(50) - viaSocket.pct(50)
	r.add("proxy: added to /v1/exec `true` p50", ms(added), fmt.Sprintf("proxied %s, direct %s", ms(viaProxy.pct(50)), ms(viaSocket.pct(50))), "<= 0.5 ms", msf(added) <= 0.5)
	return nil
}

// fanOut connects subs SSE clients to one job whose command prints a line
// every 100 ms, and measures from each output event's append time to its
// arrival at every client.
func fanOut(ctx context.Context, r *report, c *cpServer, tpl string, subs int) error {
	var j cpapi.Job
	if err := c.do(ctx, "POST", "/v1/jobs", cpapi.JobRequest{Agent: cpapi.AgentScript, Template: tpl,
		Command: "sleep 2; for i in $(seq 1 10); do echo tick-$i; sleep 0.1; done"}, &j); err != nil {
		return err
	}
	tr := &http.Transport{MaxConnsPerHost: 0, MaxIdleConnsPerHost: subs}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr}
	var mu sync.Mutex
	var lat durations
	var wg sync.WaitGroup
	errs := make(chan error, subs)
	for i := 0; i < subs; i++ {
		wg.Go(func() {
			req, _ := http.NewRequestWithContext(ctx, "GET", c.url+"/v1/jobs/"+j.ID+"/events", nil)
			req.Header.Set("Authorization", "Bearer "+c.token)
			resp, err := hc.Do(req)
			if err != nil {
				errs <- err
				return
			}
			defer resp.Body.Close()
			sc := bufio.NewScanner(resp.Body)
			for sc.Scan() {
				data, ok := strings.CutPrefix(sc.Text(), "data: ")
				if !ok {
					continue
				}
				now := time.Now()
				var e cpapi.Event
				if json.Unmarshal([]byte(data), &e) == nil && e.Type == cpapi.EventProcessOutput && now.Sub(e.Time) < 10*time.Second {
					mu.Lock()
					lat = append(lat, now.Sub(e.Time))
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		return err
	}
	r.add(fmt.Sprintf("SSE fan-out to %d subscribers p50", subs), ms(lat.pct(50)), "p99 "+ms(lat.pct(99))+fmt.Sprintf(", %d deliveries", len(lat)), "", len(lat) > 0)
	return nil
}

func appendRate(ctx context.Context, url string) (float64, error) {
	st, err := store.Open(ctx, url, nil)
	if err != nil {
		return 0, err
	}
	defer st.Close()
	tn, err := st.CreateTenant(ctx, store.Tenant{ID: "bench" + fmt.Sprint(time.Now().UnixNano()), Name: "bench"})
	if err != nil {
		return 0, err
	}
	j, err := st.CreateJob(ctx, store.Job{TenantID: tn.ID, Spec: json.RawMessage(`{}`)})
	if err != nil {
		return 0, err
	}
	batch := make([]store.EventInput, 100)
	for i := range batch {
		batch[i] = store.EventInput{Type: cpapi.EventProcessOutput, Data: json.RawMessage(`{"stream":"stdout","data":"a line of output\n"}`)}
	}
	const rounds = 100
	t := time.Now()
	for i := 0; i < rounds; i++ {
		if _, err := st.AppendEvents(ctx, j.ID, batch); err != nil {
			return 0, err
		}
	}
	return float64(rounds*len(batch)) / time.Since(t).Seconds(), nil
}
