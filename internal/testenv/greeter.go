package testenv

import (
	"net"
	"testing"
)

// Greeter listens on TCP host:0 and answers every connection with line,
// then closes it, until the test ends. It returns the port: a sandbox that
// reads line back reached host.
func Greeter(t testing.TB, host, line string) int {
	t.Helper()
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			conn.Write([]byte(line))
			conn.Close()
		}
	}()
	return ln.Addr().(*net.TCPAddr).Port
}
