package containerd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/containerd/containerd/pkg/netns"
	gocni "github.com/containerd/go-cni"

	"github.com/corral-sh/corral/internal/errdefs"
)

// Network egress. A sandbox with network "egress" gets a network namespace
// of its own, pinned under Config.NetNSDir so that it outlives both our
// process and the sandbox's task, and wired by the standard CNI plugins
// (Debian's containernetworking-plugins) to the bridge corral0: an address
// from Config.EgressSubnet, a default route through the bridge, NAT
// (ipMasq) to whatever the host reaches, and the firewall plugin's
// FORWARD rules, which docker's DROP policy would otherwise refuse.
// Sandboxes on the bridge can reach each other and the host, as on
// docker's default bridge. The namespace's path is the container's label
// corral.netns, so Delete (after a restart too) detaches it.
const (
	cniNetwork = "corral"
	cniBridge  = "corral0"
	// LabelNetNS is the container label holding the path of an egress
	// sandbox's network namespace.
	LabelNetNS = "corral.netns"

	DefaultEgressSubnet = "10.89.0.0/16"
	defaultNetNSDir     = "/run/corral/netns"
)

// defaultPluginDirs are where the CNI plugins are looked for: Debian's
// package, then the upstream convention.
var defaultPluginDirs = []string{"/usr/lib/cni", "/opt/cni/bin"}

// cniPlugins are the plugins the network needs.
var cniPlugins = []string{"bridge", "host-local", "firewall"}

// egressNet is the CNI network of egress sandboxes, loaded on first use.
type egressNet struct {
	once sync.Once
	cni  gocni.CNI
	err  error
}

// network returns the CNI network, or why egress cannot work here
// (ErrUnprocessable: the plugins are missing).
func (r *Runtime) network() (gocni.CNI, error) {
	r.net.once.Do(func() { r.net.cni, r.net.err = loadNetwork(r.cfg) })
	return r.net.cni, r.net.err
}

func loadNetwork(cfg Config) (gocni.CNI, error) {
	subnet, err := netip.ParsePrefix(cfg.EgressSubnet)
	if err != nil || !subnet.Addr().Is4() {
		return nil, errdefs.Invalidf("containerd egress subnet %q is not an IPv4 prefix", cfg.EgressSubnet)
	}
	var missing []string
	for _, p := range cniPlugins {
		if !pluginIn(cfg.CNIPluginDirs, p) {
			missing = append(missing, p)
		}
	}
	if len(missing) > 0 {
		return nil, errdefs.Unprocessablef("network egress on containerd needs the CNI plugins %s in %s (Debian: apt-get install containernetworking-plugins); network none works without them",
			strings.Join(missing, ", "), strings.Join(cfg.CNIPluginDirs, " or "))
	}
	conf, err := confList(subnet.Masked())
	if err != nil {
		return nil, err
	}
	c, err := gocni.New(gocni.WithPluginDir(cfg.CNIPluginDirs), gocni.WithInterfacePrefix("eth"), gocni.WithConfListBytes(conf))
	if err != nil {
		return nil, fmt.Errorf("containerd egress network: %w", err)
	}
	return c, nil
}

func pluginIn(dirs []string, name string) bool {
	for _, d := range dirs {
		if fi, err := os.Stat(filepath.Join(d, name)); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return true
		}
	}
	return false
}

// confList is the CNI network configuration list of the egress network.
func confList(subnet netip.Prefix) ([]byte, error) {
	type obj = map[string]any
	return json.Marshal(obj{
		"cniVersion": "1.0.0",
		"name":       cniNetwork,
		"plugins": []obj{
			{
				"type": "bridge", "bridge": cniBridge, "isGateway": true, "ipMasq": true,
				"ipam": obj{
					"type":   "host-local",
					"ranges": [][]obj{{{"subnet": subnet.String()}}},
					"routes": []obj{{"dst": "0.0.0.0/0"}},
				},
			},
			{"type": "firewall", "backend": "iptables"},
		},
	})
}

// newNetNS makes and pins a network namespace for an egress sandbox and
// returns its path. It is connected (connect) only once the container
// holding its path in a label exists: a Create that finds the id taken
// must not touch the address or NAT rules of the sandbox that has it.
func (r *Runtime) newNetNS(id string) (string, error) {
	if _, err := r.network(); err != nil {
		return "", err
	}
	ns, err := netns.NewNetNS(r.cfg.NetNSDir)
	if err != nil {
		return "", fmt.Errorf("network namespace of %s: %w", id, err)
	}
	return ns.GetPath(), nil
}

// connect wires sandbox id's network namespace at path to the egress
// network. On failure the half-made attachment is undone; the namespace
// is left to the caller.
func (r *Runtime) connect(ctx context.Context, id, path string) error {
	c, err := r.network()
	if err != nil {
		return err
	}
	if _, err := c.Setup(ctx, id, path); err != nil {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		defer cancel()
		_ = c.Remove(cctx, id, path) // the setup error matters more
		return fmt.Errorf("connect %s to the egress network: %w", id, err)
	}
	return nil
}

// detach disconnects sandbox id from the egress network (its address, NAT
// and firewall rules) and removes its network namespace at path. Either
// being gone already is fine.
func (r *Runtime) detach(ctx context.Context, id, path string) error {
	// The path comes from a label: never unmount or remove anything but
	// a namespace of ours.
	if filepath.Dir(path) != filepath.Clean(r.cfg.NetNSDir) || !strings.HasPrefix(filepath.Base(path), "cni-") {
		return fmt.Errorf("sandbox %s: network namespace %q is not under %s; left alone", id, path, r.cfg.NetNSDir)
	}
	c, err := r.network()
	if err != nil {
		return fmt.Errorf("detach %s from the egress network: %w", id, err)
	}
	nsPath := path
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		nsPath = "" // after a reboot: the plugins free what they can without it
	}
	if err := c.Remove(ctx, id, nsPath); err != nil {
		return fmt.Errorf("detach %s from the egress network: %w", id, err)
	}
	if err := netns.LoadNetNS(path).Remove(); err != nil {
		return fmt.Errorf("remove the network namespace of %s: %w", id, err)
	}
	return nil
}

// resolvConf returns the file an egress sandbox gets as /etc/resolv.conf:
// host, unless every name server it lists is a loopback address (a local
// stub such as systemd-resolved's 127.0.0.53, which the sandbox's own
// network cannot reach); then upstream, when it exists. "" means neither
// serves: the image keeps its own.
func resolvConf(host, upstream string) string {
	if b, err := os.ReadFile(host); err == nil && !onlyLoopback(string(b)) {
		return host
	}
	if fi, err := os.Stat(upstream); err == nil && fi.Mode().IsRegular() {
		return upstream
	}
	return ""
}

// onlyLoopback reports whether a resolv.conf names no name server that is
// not a loopback address (none at all counts too).
func onlyLoopback(conf string) bool {
	for line := range strings.Lines(conf) {
		f := strings.Fields(line)
		if len(f) < 2 || f[0] != "nameserver" {
			continue
		}
		if a, err := netip.ParseAddr(f[1]); err != nil || !a.IsLoopback() {
			return false
		}
	}
	return true
}
