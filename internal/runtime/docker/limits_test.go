package docker

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/corral-sh/corral/api/sandboxapi"
	"github.com/corral-sh/corral/internal/runtime"
	"github.com/corral-sh/corral/internal/testenv"
)

func TestMemoryLimitKillsHog(t *testing.T) {
	r := newRuntime(t)
	sb, c := create(t, r, runtime.Spec{Resources: runtime.Resources{MemoryMB: 128}})
	res := sh(t, c, "head -c 600000000 /dev/zero | tail")
	killed := (res.ExitCode != nil && *res.ExitCode == 137) || (res.Signal != nil && *res.Signal == "SIGKILL")
	if !killed {
		t.Errorf("600 MB hog under 128 MiB: exit %v signal %v; want killed (137 or SIGKILL)", res.ExitCode, res.Signal)
	}
	if got := out(t, c, "echo alive"); got != "alive" {
		t.Errorf("sandboxd after the hog = %q; want alive", got)
	}
	hc := inspect(t, r, sb.ID).HostConfig
	if hc.Memory != 128<<20 || hc.MemorySwap != hc.Memory {
		t.Errorf("Memory, MemorySwap = %d, %d; want %d for both (no swap)", hc.Memory, hc.MemorySwap, 128<<20)
	}
}

// TestPIDsLimitCapsForks fills a 64-pid sandbox with sleeps: forks fail,
// the engine counts no more than 64 processes, and sandboxd serves again
// once they end.
func TestPIDsLimitCapsForks(t *testing.T) {
	r := newRuntime(t)
	sb, c := create(t, r, runtime.Spec{Resources: runtime.Resources{PIDs: 64}})
	res := sh(t, c, "for i in $(seq 300); do sleep 10 >/dev/null 2>&1 & done; echo all-forked")
	if strings.Contains(res.Stdout, "all-forked") || !strings.Contains(res.Stderr, "fork") {
		t.Errorf("300 forks under pids 64: stdout %q, stderr %q; want fork failures", res.Stdout, res.Stderr)
	}
	top, err := r.cli.ContainerTop(testCtx(t, time.Minute), containerPrefix+sb.ID, client.ContainerTopOptions{})
	if err != nil {
		t.Fatalf("top: %v", err)
	}
	if n := len(top.Processes); n > 64 || n < 32 {
		t.Errorf("%d processes in the sandbox; want the limit reached: 32-64", n)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		res, err := c.Exec(testCtx(t, time.Minute), sandboxapi.ExecRequest{Command: "echo", Args: []string{"alive"}})
		if err == nil && strings.TrimSpace(res.Stdout) == "alive" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("sandboxd does not serve after the sleeps ended: %+v, %v", res, err)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func TestCPUs(t *testing.T) {
	r := newRuntime(t)
	for _, tt := range []struct {
		cpus      float64
		wantNproc string
		wantNano  int64
	}{
		{1, "1", 1e9},
		{0.5, "1", 5e8},
	} {
		t.Run(fmt.Sprint(tt.cpus), func(t *testing.T) {
			sb, c := create(t, r, runtime.Spec{Resources: runtime.Resources{CPUs: tt.cpus}})
			if got := out(t, c, "nproc"); got != tt.wantNproc {
				t.Errorf("nproc with cpus %v = %s; want %s", tt.cpus, got, tt.wantNproc)
			}
			if got := inspect(t, r, sb.ID).HostConfig.NanoCPUs; got != tt.wantNano {
				t.Errorf("NanoCPUs = %d; want %d", got, tt.wantNano)
			}
		})
	}
}

// TestNetworkNone checks that a network-none sandbox reaches neither the
// host's loopback nor the docker bridge's gateway, while an egress one
// does reach the gateway (so the probe itself works).
func TestNetworkNone(t *testing.T) {
	r := newRuntime(t)
	loopback := listen(t, "127.0.0.1")
	bridge := listen(t, bridgeGateway(t, r))
	reach := func(addr string) string {
		host, port, _ := net.SplitHostPort(addr)
		return fmt.Sprintf("timeout 5 bash -c 'exec 3<>/dev/tcp/%s/%s && cat <&3' 2>&1", host, port)
	}

	_, none := create(t, r, runtime.Spec{Network: runtime.NetworkNone})
	for _, addr := range []string{loopback, bridge} {
		if res := sh(t, none, reach(addr)); strings.Contains(res.Stdout, "secret") {
			t.Errorf("network none reached %s", addr)
		}
	}
	if got := out(t, none, "tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '"); got != "lo" {
		t.Errorf("interfaces under network none = %q; want lo", got)
	}
	_, egress := create(t, r, runtime.Spec{Network: runtime.NetworkEgress})
	if res := sh(t, egress, reach(bridge)); !strings.Contains(res.Stdout, "secret") {
		t.Errorf("network egress could not reach the bridge gateway %s: %s", bridge, res.Stdout)
	}
}

// bridgeGateway returns the host's address on docker's default bridge:
// its IPAM gateway, or the bridge interface's address when the engine
// does not report one.
func bridgeGateway(t *testing.T, r *Runtime) string {
	t.Helper()
	nw, err := r.cli.NetworkInspect(testCtx(t, time.Minute), "bridge", client.NetworkInspectOptions{})
	if err != nil {
		t.Fatalf("inspect the bridge network: %v", err)
	}
	for _, c := range nw.Network.IPAM.Config {
		if c.Gateway.IsValid() {
			return c.Gateway.String()
		}
	}
	name := nw.Network.Options["com.docker.network.bridge.name"]
	if name == "" {
		name = "docker0"
	}
	ifc, err := net.InterfaceByName(name)
	if err != nil {
		t.Fatalf("bridge interface: %v", err)
	}
	addrs, _ := ifc.Addrs()
	for _, a := range addrs {
		if ipn, ok := a.(*net.IPNet); ok && ipn.IP.To4() != nil {
			return ipn.IP.String()
		}
	}
	t.Fatalf("no IPv4 address on %s", name)
	return ""
}

// listen serves "secret" on host:0 until the test ends; it returns the
// address.
func listen(t *testing.T, host string) string {
	t.Helper()
	return net.JoinHostPort(host, strconv.Itoa(testenv.Greeter(t, host, "secret\n")))
}

func TestSecurity(t *testing.T) {
	r := newRuntime(t)
	sb, c := create(t, r, runtime.Spec{})
	status := out(t, c, "cat /proc/self/status")
	for _, want := range []string{
		"CapInh:\t0000000000000000", "CapPrm:\t0000000000000000", "CapEff:\t0000000000000000",
		"CapBnd:\t0000000000000000", "CapAmb:\t0000000000000000", "NoNewPrivs:\t1", "Seccomp:\t2",
	} {
		if !strings.Contains(status, want) {
			t.Errorf("/proc/self/status lacks %q", want)
		}
	}
	if got := out(t, c, "tr '\\0' ' ' < /proc/1/cmdline"); !strings.Contains(got, "sandboxd") {
		t.Errorf("PID 1 is %q; want sandboxd", got)
	}
	if res := sh(t, c, "touch /etc/corral-test || touch "+runtime.BinaryPath); res.ExitCode == nil || *res.ExitCode == 0 {
		t.Errorf("the agent could write /etc or the corral binary")
	}
	if got := out(t, c, "ls -A /run/corral"); got != "sandboxd.sock" {
		t.Errorf("/run/corral holds %q; want sandboxd.sock only", got)
	}
	if hc := inspect(t, r, sb.ID).HostConfig; hc.Init == nil || *hc.Init || hc.RestartPolicy.Name != "no" {
		t.Errorf("Init, RestartPolicy = %v, %q; want false, no", hc.Init, hc.RestartPolicy.Name)
	}
}

func TestIsolation(t *testing.T) {
	r := newRuntime(t)
	_, a := create(t, r, runtime.Spec{})
	_, b := create(t, r, runtime.Spec{})
	out(t, a, "echo a-secret > /workspace/secret-a")
	if _, err := a.Spawn(testCtx(t, time.Minute), sandboxapi.SpawnRequest{Command: "sleep", Args: []string{"313"}}); err != nil {
		t.Fatal(err)
	}
	if res := sh(t, b, "cat /workspace/secret-a"); res.ExitCode == nil || *res.ExitCode == 0 {
		t.Errorf("sandbox b reads a's file: %q", res.Stdout)
	}
	if got := out(t, b, "cat /proc/[0-9]*/cmdline | tr '\\0' ' '"); strings.Contains(got, "313") {
		t.Errorf("sandbox b sees a's processes: %q", got)
	}
}

// TestDiskLimit checks that disk_mb is enforced when the engine can, and
// otherwise recorded as not enforced without failing Create.
func TestDiskLimit(t *testing.T) {
	r := newRuntime(t)
	sb, c := create(t, r, runtime.Spec{Resources: runtime.Resources{DiskMB: 32}})
	s, err := r.state.Open(sb.ID)
	if err != nil {
		t.Fatal(err)
	}
	opt := inspect(t, r, sb.ID).HostConfig.StorageOpt
	if why := s.Meta.Extra[metaDiskLimit]; why != "" {
		t.Logf("engine does not enforce disk limits: %s", why)
		if !strings.HasPrefix(why, "not enforced: ") || len(opt) != 0 {
			t.Errorf("meta disk_limit %q, StorageOpt %v; want the reason and no option", why, opt)
		}
		return
	}
	if opt["size"] != "32M" {
		t.Errorf("StorageOpt = %v; want size 32M", opt)
	}
	if res := sh(t, c, "head -c 64000000 /dev/zero > /workspace/big"); res.ExitCode != nil && *res.ExitCode == 0 {
		t.Errorf("wrote 64 MB under a 32 MB disk limit")
	}
}

func inspect(t *testing.T, r *Runtime, id string) *container.InspectResponse {
	t.Helper()
	res, err := r.cli.ContainerInspect(testCtx(t, time.Minute), containerPrefix+id, client.ContainerInspectOptions{})
	if err != nil {
		t.Fatalf("inspect container of %s: %v", id, err)
	}
	return &res.Container
}
