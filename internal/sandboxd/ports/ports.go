// Package ports lists the TCP sockets listening inside the sandbox and the
// processes that own them, from /proc/net/tcp, /proc/net/tcp6 and the file
// descriptors in /proc/<pid>/fd.
//
// Owners are best-effort: processes that vanish or whose fd directory we may
// not read are skipped, and their sockets are listed without a PID.
package ports

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Socket is one line of /proc/net/tcp{,6}.
type Socket struct {
	Local netip.AddrPort
	State uint8  // TCP state; 0x0A is LISTEN
	Inode uint64 // 0 for sockets in TIME_WAIT and the like
}

// Listener is a listening TCP socket and, when found, its owner.
type Listener struct {
	Addr    netip.AddrPort
	Inode   uint64
	PID     int    // 0 when unknown
	Command string // the owner's executable name, "" when unknown
}

// stateListen is TCP_LISTEN in the kernel's tcp_states.h.
const stateListen = 0x0A

// List returns the listening TCP sockets (IPv4 and IPv6) of the network
// namespace procRoot belongs to, sorted by port then address, with their
// owners. procRoot is "/proc" when empty. A missing tcp6 table (IPv6
// disabled) is not an error.
func List(procRoot string) ([]Listener, error) {
	if procRoot == "" {
		procRoot = "/proc"
	}
	var socks []Socket
	for _, name := range []string{"tcp", "tcp6"} {
		path := filepath.Join(procRoot, "net", name)
		f, err := os.Open(path)
		if errors.Is(err, os.ErrNotExist) && name == "tcp6" {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("ports: %w", err)
		}
		s, err := Parse(f)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("ports: %s: %w", path, err)
		}
		socks = append(socks, s...)
	}

	var out []Listener
	seen := make(map[netip.AddrPort]bool)
	want := make(map[uint64]int) // inode -> index in out
	for _, s := range socks {
		if s.State != stateListen || seen[s.Local] {
			continue // SO_REUSEPORT groups show one address many times
		}
		seen[s.Local] = true
		if s.Inode != 0 {
			want[s.Inode] = len(out)
		}
		out = append(out, Listener{Addr: s.Local, Inode: s.Inode})
	}
	for inode, pid := range owners(procRoot, want) {
		l := &out[want[inode]]
		l.PID = pid
		l.Command = command(procRoot, pid)
	}
	slices.SortFunc(out, func(a, b Listener) int {
		return cmp.Or(cmp.Compare(a.Addr.Port(), b.Addr.Port()), a.Addr.Addr().Compare(b.Addr.Addr()))
	})
	return out, nil
}

// Parse reads a /proc/net/tcp or /proc/net/tcp6 table. The header line is
// skipped; a malformed line is an error.
func Parse(r io.Reader) ([]Socket, error) {
	var out []Socket
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for n := 1; sc.Scan(); n++ {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 || fields[0] == "sl" {
			continue
		}
		// sl local rem st tx:rx tr:when retrnsmt uid timeout inode ...
		if len(fields) < 10 {
			return nil, fmt.Errorf("line %d: %d fields, want at least 10", n, len(fields))
		}
		local, err := parseAddrPort(fields[1])
		if err != nil {
			return nil, fmt.Errorf("line %d: local address %q: %w", n, fields[1], err)
		}
		state, err := strconv.ParseUint(fields[3], 16, 8)
		if err != nil {
			return nil, fmt.Errorf("line %d: state %q: %w", n, fields[3], err)
		}
		inode, err := strconv.ParseUint(fields[9], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("line %d: inode %q: %w", n, fields[9], err)
		}
		out = append(out, Socket{Local: local, State: uint8(state), Inode: inode})
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// parseAddrPort decodes "0100007F:1F90" (IPv4) or 32 hex digits then ":port"
// (IPv6). The kernel prints the address as 32-bit words in host byte order
// (so 127.0.0.1 is 0100007F on little-endian machines) and the port as a
// plain number.
func parseAddrPort(s string) (netip.AddrPort, error) {
	hexAddr, hexPort, ok := strings.Cut(s, ":")
	if !ok {
		return netip.AddrPort{}, errors.New("no port")
	}
	port, err := strconv.ParseUint(hexPort, 16, 16)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("port: %w", err)
	}
	if len(hexAddr) != 8 && len(hexAddr) != 32 {
		return netip.AddrPort{}, fmt.Errorf("address has %d hex digits, want 8 or 32", len(hexAddr))
	}
	raw, err := hex.DecodeString(hexAddr)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("address: %w", err)
	}
	// Each 4-byte word was printed as a host-order integer: read it back as
	// big-endian digits, store it in host order to get the wire bytes.
	for i := 0; i < len(raw); i += 4 {
		binary.NativeEndian.PutUint32(raw[i:], binary.BigEndian.Uint32(raw[i:]))
	}
	addr, _ := netip.AddrFromSlice(raw)
	return netip.AddrPortFrom(addr.Unmap(), uint16(port)), nil
}

// owners maps socket inodes in want to the lowest PID holding a descriptor
// for them (the parent, when a listener is inherited by workers).
func owners(procRoot string, want map[uint64]int) map[uint64]int {
	found := make(map[uint64]int)
	if len(want) == 0 {
		return found
	}
	entries, err := os.ReadDir(procRoot)
	if err != nil {
		return found
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid <= 0 {
			continue
		}
		fdDir := filepath.Join(procRoot, e.Name(), "fd")
		fds, err := os.ReadDir(fdDir)
		if err != nil {
			continue // gone, or not ours to read
		}
		for _, fd := range fds {
			link, err := os.Readlink(filepath.Join(fdDir, fd.Name()))
			if err != nil {
				continue
			}
			num, ok := strings.CutPrefix(link, "socket:[")
			if !ok {
				continue
			}
			inode, err := strconv.ParseUint(strings.TrimSuffix(num, "]"), 10, 64)
			if err != nil {
				continue
			}
			if _, ok := want[inode]; ok {
				if old, ok := found[inode]; !ok || pid < old {
					found[inode] = pid
				}
			}
		}
	}
	return found
}

// command names pid's executable: the base of argv[0], else its comm.
func command(procRoot string, pid int) string {
	dir := filepath.Join(procRoot, strconv.Itoa(pid))
	if data, err := os.ReadFile(filepath.Join(dir, "cmdline")); err == nil {
		if arg0, _, _ := bytes.Cut(data, []byte{0}); len(arg0) > 0 {
			return filepath.Base(string(arg0))
		}
	}
	data, _ := os.ReadFile(filepath.Join(dir, "comm"))
	return strings.TrimSpace(string(data))
}
