package containerd

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/corral-sh/corral/internal/errdefs"
	"github.com/corral-sh/corral/internal/runtime"
	"github.com/corral-sh/corral/internal/testenv"
)

// TestNetworkEgress: an egress sandbox gets its own address on the CNI
// bridge and reaches the host through it; a network-none sandbox does not;
// Delete gives back the address, the NAT rules and the namespace.
func TestNetworkEgress(t *testing.T) {
	r := newRuntime(t)
	if _, err := r.network(); err != nil {
		t.Fatalf("the CNI plugins (scripts/deps.sh installs them): %v", err)
	}
	egress, c := create(t, r, runtime.Spec{Network: runtime.NetworkEgress})
	otherSB, other := create(t, r, runtime.Spec{Network: runtime.NetworkEgress})
	_, none := create(t, r, runtime.Spec{Network: runtime.NetworkNone})

	// A server on the host's side of the bridge, its gateway.
	gw := bridgeAddr(t)
	port := testenv.Greeter(t, gw, "host-hello\n")
	probe := fmt.Sprintf("timeout 5 bash -c 'exec 3<>/dev/tcp/%s/%d && cat <&3' 2>&1", gw, port)

	if out, _ := sh(t, c, probe); !strings.Contains(out, "host-hello") {
		t.Errorf("the egress sandbox did not reach the host at %s: %q", gw, out)
	}
	if out, _ := sh(t, none, probe); strings.Contains(out, "host-hello") {
		t.Errorf("the network-none sandbox reached the host at %s", gw)
	}
	if got, _ := sh(t, c, "ls /sys/class/net | tr '\\n' ' '"); got != "eth0 lo" {
		t.Errorf("interfaces of the egress sandbox = %q; want eth0 and lo", got)
	}
	// Two egress sandboxes hold two addresses.
	ips := map[string]string{}
	for ip, holder := range ipamHolders(t) {
		ips[holder] = ip
	}
	if ips[egress.ID] == "" || ips[otherSB.ID] == "" || ips[egress.ID] == ips[otherSB.ID] {
		t.Errorf("addresses of two egress sandboxes = %q and %q; want two", ips[egress.ID], ips[otherSB.ID])
	}
	if out, _ := sh(t, other, probe); !strings.Contains(out, "host-hello") {
		t.Errorf("the second egress sandbox did not reach the host at %s: %q", gw, out)
	}
	if _, err := os.Stat("/etc/resolv.conf"); err == nil {
		if out, code := sh(t, c, "cat /etc/resolv.conf >/dev/null && echo ok"); code != 0 || out != "ok" {
			t.Errorf("resolv.conf in the egress sandbox: %q, exit %d", out, code)
		}
	}

	// A Create that finds the id taken in containerd (its state directory
	// gone) is refused without touching the holder's address or NAT.
	if err := os.RemoveAll(filepath.Join(r.cfg.StateDir, otherSB.ID)); err != nil {
		t.Fatal(err)
	}
	held := ipamHolders(t)
	if _, err := r.Create(testCtx(t, time.Minute), runtime.Spec{ID: otherSB.ID, Network: runtime.NetworkEgress}); !errors.Is(err, errdefs.ErrConflict) {
		t.Errorf("Create(egress) of a taken id = %v; want a conflict", err)
	}
	if got := ipamHolders(t); got[ips[otherSB.ID]] != otherSB.ID || len(got) != len(held) {
		t.Errorf("reservations after the refused Create = %v; want %v", got, held)
	}
	if out, _ := sh(t, other, probe); !strings.Contains(out, "host-hello") {
		t.Errorf("after the refused Create, the holder no longer reaches the host: %q", out)
	}

	// Delete gives everything back.
	lbls := containerLabels(t, r, egress.ID)
	nsPath := lbls[LabelNetNS]
	if filepath.Dir(nsPath) != r.cfg.NetNSDir {
		t.Fatalf("label %s = %q; want a namespace under %s", LabelNetNS, nsPath, r.cfg.NetNSDir)
	}
	if err := r.Delete(testCtx(t, time.Minute), egress.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(nsPath); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("network namespace %s after Delete: %v; want it gone", nsPath, err)
	}
	if rules := iptables(t, "-t", "nat", "-S"); strings.Contains(rules, egress.ID) {
		t.Errorf("NAT rules of %s left after Delete:\n%s", egress.ID, rules)
	}
	for ip, holder := range ipamHolders(t) {
		if holder == egress.ID {
			t.Errorf("address %s is still reserved for %s after Delete", ip, egress.ID)
		}
	}
}

// TestNetworkEgressErrors: without the plugins, egress is refused with the
// package to install; a network namespace label outside ours is never
// touched.
func TestNetworkEgressErrors(t *testing.T) {
	base := newRuntime(t)
	cfg := base.cfg
	cfg.CNIPluginDirs = []string{t.TempDir()}
	r, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.Create(testCtx(t, time.Minute), runtime.Spec{Network: runtime.NetworkEgress})
	if !errors.Is(err, errdefs.ErrUnprocessable) || !strings.Contains(err.Error(), "containernetworking-plugins") {
		t.Errorf("Create(egress) without plugins = %v; want unprocessable naming the package", err)
	}

	victim := filepath.Join(t.TempDir(), "cni-not-ours")
	if err := os.WriteFile(victim, []byte("keep"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := base.detach(testCtx(t, time.Minute), "sb_x", victim); err == nil {
		t.Errorf("detach of a path outside %s succeeded", base.cfg.NetNSDir)
	}
	if _, err := os.Stat(victim); err != nil {
		t.Errorf("detach touched %s: %v", victim, err)
	}
}

// bridgeAddr returns the host's IPv4 address on the egress bridge.
func bridgeAddr(t *testing.T) string {
	t.Helper()
	ifc, err := net.InterfaceByName(cniBridge)
	if err != nil {
		t.Fatalf("bridge %s: %v", cniBridge, err)
	}
	addrs, err := ifc.Addrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if ipn, ok := a.(*net.IPNet); ok && ipn.IP.To4() != nil {
			return ipn.IP.String()
		}
	}
	t.Fatalf("bridge %s has no IPv4 address: %v", cniBridge, addrs)
	return ""
}

func containerLabels(t *testing.T, r *Runtime, id string) map[string]string {
	t.Helper()
	c, err := r.conn(testCtx(t, time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	ctx := withNamespace(testCtx(t, time.Minute))
	ctr, err := c.LoadContainer(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	l, err := ctr.Labels(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func iptables(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command("iptables", append([]string{"-w"}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("iptables %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// ipamHolders returns the addresses host-local has reserved on the egress
// network, with the container id holding each.
func ipamHolders(t *testing.T) map[string]string {
	t.Helper()
	dir := filepath.Join("/var/lib/cni/networks", cniNetwork)
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatalf("host-local's reservations: %v", err)
	}
	held := map[string]string{}
	for _, e := range ents {
		if net.ParseIP(e.Name()) == nil {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			continue // given back meanwhile
		}
		id, _, _ := strings.Cut(string(data), "\n")
		held[e.Name()] = strings.TrimSpace(id)
	}
	return held
}

func TestResolvConf(t *testing.T) {
	dir := t.TempDir()
	file := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	dhcp := file("dhcp", "# from DHCP\nnameserver 192.0.2.53\nsearch example.org\n")
	stub := file("stub", "nameserver 127.0.0.53\noptions edns0 trust-ad\n")
	mixed := file("mixed", "nameserver 127.0.0.1\nnameserver 2001:db8::53\n")
	upstream := file("upstream", "nameserver 198.51.100.1\n")
	missing := filepath.Join(dir, "missing")
	for _, c := range []struct {
		host, upstream, want string
	}{
		{dhcp, upstream, dhcp},
		{mixed, upstream, mixed},
		{stub, upstream, upstream},
		{stub, missing, ""},
		{missing, upstream, upstream},
		{missing, missing, ""},
	} {
		if got := resolvConf(c.host, c.upstream); got != c.want {
			t.Errorf("resolvConf(%s, %s) = %q; want %q", filepath.Base(c.host), filepath.Base(c.upstream), got, c.want)
		}
	}
}
