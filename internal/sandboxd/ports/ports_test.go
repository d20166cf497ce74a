package ports_test

import (
	"encoding/binary"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/corral-sh/corral/internal/sandboxd/ports"
)

// The fixtures are what a little-endian kernel prints.
const tcpFixture = `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000:07E8 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 651 1 00000000e8bd5e0a 100 0 0 10 0
   1: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 4242 1 0000000000000000 100 0 0 10 0
   2: 020200C0:BA50 507100CB:01BB 06 00000000:00000000 03:00001138 00000000     0        0 0 3 000000006ee6459c
   3: 0A01A8C0:0016 0B01A8C0:D431 01 00000000:00000000 02:000AFC4F 00000000     0        0 777 2 0000000000000000 20 4 30 10 -1
`

const tcp6Fixture = `  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000000000000000000000000000:0BB8 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 5001 1 0000000000000000 100 0 0 10 0
   1: 00000000000000000000000001000000:1F90 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 5002 1 0000000000000000 100 0 0 10 0
   2: B80D0120000000000000000001000000:01BB 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 5003 1 0000000000000000 100 0 0 10 0
   3: 0000000000000000FFFF00000100007F:2328 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 5004 1 0000000000000000 100 0 0 10 0
`

func littleEndian(t *testing.T) {
	t.Helper()
	if binary.NativeEndian.Uint16([]byte{1, 0}) != 1 {
		t.Skip("fixtures are little-endian kernel output")
	}
}

func TestPortsParse(t *testing.T) {
	littleEndian(t)
	tests := []struct {
		name  string
		input string
		want  []ports.Socket
	}{
		{"tcp", tcpFixture, []ports.Socket{
			{Local: netip.MustParseAddrPort("0.0.0.0:2024"), State: 0x0A, Inode: 651},
			{Local: netip.MustParseAddrPort("127.0.0.1:8080"), State: 0x0A, Inode: 4242},
			{Local: netip.MustParseAddrPort("192.0.2.2:47696"), State: 0x06, Inode: 0},
			{Local: netip.MustParseAddrPort("192.168.1.10:22"), State: 0x01, Inode: 777},
		}},
		{"tcp6", tcp6Fixture, []ports.Socket{
			{Local: netip.MustParseAddrPort("[::]:3000"), State: 0x0A, Inode: 5001},
			{Local: netip.MustParseAddrPort("[::1]:8080"), State: 0x0A, Inode: 5002},
			{Local: netip.MustParseAddrPort("[2001:db8::1]:443"), State: 0x0A, Inode: 5003},
			{Local: netip.MustParseAddrPort("127.0.0.1:9000"), State: 0x0A, Inode: 5004}, // v4-mapped
		}},
		{"header only", "  sl  local_address rem_address   st\n", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ports.Parse(strings.NewReader(tt.input))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("Parse got %d sockets %+v; want %d", len(got), got, len(tt.want))
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("socket %d = %+v; want %+v", i, got[i], tt.want[i])
				}
			}
		})
	}
}

func TestPortsParseMalformed(t *testing.T) {
	tests := []struct{ name, line string }{
		{"few fields", "0: 0100007F:1F90 00000000:0000 0A"},
		{"no port", "0: 0100007F 00000000:0000 0A 0:0 0:0 0 0 0 1"},
		{"odd address", "0: 0100007:1F90 00000000:0000 0A 0:0 0:0 0 0 0 1"},
		{"not hex", "0: 0100007G:1F90 00000000:0000 0A 0:0 0:0 0 0 0 1"},
		{"big port", "0: 0100007F:1FFFF 00000000:0000 0A 0:0 0:0 0 0 0 1"},
		{"bad state", "0: 0100007F:1F90 00000000:0000 ZZ 0:0 0:0 0 0 0 1"},
		{"bad inode", "0: 0100007F:1F90 00000000:0000 0A 0:0 0:0 0 0 0 x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got, err := ports.Parse(strings.NewReader(tt.line)); err == nil {
				t.Errorf("Parse(%q) = %+v, nil; want an error", tt.line, got)
			}
		})
	}
}

// TestListFakeProc lists from a fake /proc: only LISTEN sockets, sorted,
// owners found through fd links, unknown owners left empty.
func TestPortsListFakeProc(t *testing.T) {
	littleEndian(t)
	proc := t.TempDir()
	write := func(name, content string) {
		path := filepath.Join(proc, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	link := func(target, name string) {
		path := filepath.Join(proc, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, path); err != nil {
			t.Fatal(err)
		}
	}
	write("net/tcp", tcpFixture)
	write("net/tcp6", tcp6Fixture)
	write("42/cmdline", "/usr/bin/python3\x00-m\x00http.server\x00")
	link("socket:[4242]", "42/fd/3")
	link("/dev/null", "42/fd/0")
	write("7/comm", "node\n")
	link("socket:[5001]", "7/fd/20")
	link("socket:[5001]", "99/fd/20") // a forked worker sharing the socket
	write("99/comm", "worker\n")
	write("self/comm", "ignored\n")

	got, err := ports.List(proc)
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	want := []ports.Listener{
		{Addr: netip.MustParseAddrPort("[2001:db8::1]:443"), Inode: 5003},
		{Addr: netip.MustParseAddrPort("0.0.0.0:2024"), Inode: 651},
		{Addr: netip.MustParseAddrPort("[::]:3000"), Inode: 5001, PID: 7, Command: "node"},
		{Addr: netip.MustParseAddrPort("127.0.0.1:8080"), Inode: 4242, PID: 42, Command: "python3"},
		{Addr: netip.MustParseAddrPort("[::1]:8080"), Inode: 5002},
		{Addr: netip.MustParseAddrPort("127.0.0.1:9000"), Inode: 5004},
	}
	if len(got) != len(want) {
		t.Fatalf("List got %d listeners %+v; want %d", len(got), got, len(want))
	}
	for i := range got {
		if got[i] != want[i] {
			t.Errorf("listener %d = %+v; want %+v", i, got[i], want[i])
		}
	}
}

func TestPortsListNoTCP6(t *testing.T) {
	littleEndian(t)
	proc := t.TempDir()
	if err := os.MkdirAll(filepath.Join(proc, "net"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := ports.List(proc); err == nil {
		t.Errorf("List without net/tcp: error = nil; want one")
	}
	if err := os.WriteFile(filepath.Join(proc, "net", "tcp"), []byte(tcpFixture), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := ports.List(proc)
	if err != nil || len(got) != 2 {
		t.Errorf("List without net/tcp6 = %+v, %v; want the 2 IPv4 listeners", got, err)
	}
}

// TestListRealListener opens real listeners and finds them, owned by us.
func TestPortsListRealListener(t *testing.T) {
	type opened struct {
		ln   net.Listener
		addr netip.AddrPort
	}
	var lns []opened
	for _, addr := range []string{"127.0.0.1:0", "[::1]:0"} {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			if strings.HasPrefix(addr, "[") {
				t.Logf("no IPv6 loopback (%v); checking IPv4 only", err)
				continue
			}
			t.Fatal(err)
		}
		defer ln.Close()
		lns = append(lns, opened{ln, ln.Addr().(*net.TCPAddr).AddrPort()})
	}
	got, err := ports.List("")
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	exe, _ := os.Executable()
	for _, o := range lns {
		var found *ports.Listener
		for i := range got {
			if got[i].Addr == o.addr {
				found = &got[i]
			}
		}
		if found == nil {
			t.Errorf("List() has no listener on %v; got %+v", o.addr, got)
			continue
		}
		if found.PID != os.Getpid() {
			t.Errorf("listener %v PID = %d; want %d (us)", o.addr, found.PID, os.Getpid())
		}
		if found.Command != filepath.Base(exe) {
			t.Errorf("listener %v Command = %q; want %q", o.addr, found.Command, filepath.Base(exe))
		}
	}
}
