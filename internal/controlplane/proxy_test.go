package controlplane_test

import (
	"context"
	"testing"

	"github.com/corral-sh/corral/api/cpapi"
	"github.com/corral-sh/corral/api/sandboxapi"
	"github.com/corral-sh/corral/client"
	"github.com/corral-sh/corral/internal/controlplane/controlplanetest"
)

// TestProxyStreamsBackToBack runs many streaming execs through the
// sandbox proxy in a row. sandboxd starts streaming before the proxy has
// finished forwarding the request body; without full duplex the HTTP/1
// server discarded the rest of the body, which cut the upstream request
// and so the stream (seen as "unexpected EOF" every few dozen calls).
func TestProxyStreamsBackToBack(t *testing.T) {
	srv := controlplanetest.Start(t, controlplanetest.Options{RateLimit: -1})
	cp, err := client.NewControlPlane(srv.URL, client.WithToken(srv.Token))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	sb, err := cp.CreateSandbox(ctx, cpapi.SandboxRequest{Template: srv.Template})
	if err != nil {
		t.Fatal(err)
	}
	c := cp.Sandbox(sb.ID)
	for i := 0; i < 300; i++ {
		res, err := c.ExecStream(ctx, sandboxapi.ExecRequest{Command: "echo hi", Shell: true}, nil)
		if err != nil || res.ExitCode == nil || *res.ExitCode != 0 {
			t.Fatalf("streaming exec %d through the proxy = %+v, %v", i, res, err)
		}
	}
}
