package bench

import (
	"io"
	"net"
	"os"
	"time"
)

// tcpFloor measures the fastest any server could send the file over
// loopback TCP on this machine right now: a bare listener that sendfile()s
// it to a client reading with a 1 MiB buffer. No HTTP, no parsing. The
// download figure is reported against it, since both share the machine's
// noise.
func tcpFloor(path string, rounds int) (time.Duration, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			f, err := os.Open(path)
			if err == nil {
				_, _ = io.Copy(c, f) // *net.TCPConn.ReadFrom: sendfile
				f.Close()
			}
			c.Close()
		}
	}()
	buf := make([]byte, 1<<20)
	var ds durations
	for i := 0; i < rounds; i++ {
		t := time.Now()
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			return 0, err
		}
		_, err = io.CopyBuffer(sink{}, c, buf)
		c.Close()
		if err != nil {
			return 0, err
		}
		ds = append(ds, time.Since(t))
	}
	return ds.pct(50), nil
}
