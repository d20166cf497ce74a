package client_test

import (
	"net"
	"testing"
	"time"
)

func TestInfo(t *testing.T) {
	forEachTransport(t, func(t *testing.T, d *daemon) {
		info, err := d.c.Info(testContext(t, 5*time.Second))
		if err != nil {
			t.Fatalf("Info: %v", err)
		}
		if info.CPUs <= 0 || info.MemoryLimitBytes <= 0 || info.DiskTotalBytes <= 0 || info.Version == "" {
			t.Errorf("Info() = %+v; want CPUs, memory, disk and a version", info)
		}
	})
}

func TestPorts(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() }) // the subtests run after this function returns
	want := ln.Addr().(*net.TCPAddr).Port
	forEachTransport(t, func(t *testing.T, d *daemon) {
		ports, err := d.c.Ports(testContext(t, 5*time.Second))
		if err != nil {
			t.Fatalf("Ports: %v", err)
		}
		for _, p := range ports {
			if p.Port == want {
				if p.Address != "127.0.0.1" {
					t.Errorf("port %d address = %q; want 127.0.0.1", want, p.Address)
				}
				return
			}
		}
		t.Errorf("Ports() = %+v; want one with port %d", ports, want)
	})
}
