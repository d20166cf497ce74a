//go:build !slim

package cli

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/corral-sh/corral/internal/runtime/catalog"
)

// execute runs cmd with args and returns its stdout, stderr and error.
func execute(t *testing.T, cmd *cobra.Command, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd.SetArgs(args)
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SilenceUsage = true
	cmd.SilenceErrors = true
	err = cmd.ExecuteContext(t.Context())
	return out.String(), errOut.String(), err
}

func TestWriteRuntimes(t *testing.T) {
	st := []catalog.Status{
		{Name: "kubernetes", Isolation: "pod", Reason: "not built yet"},
		{Name: "containerd", Isolation: "container", Available: true},
		{Name: "docker", Isolation: "container", Available: true},
		{Name: "local", Isolation: "none", Reason: "needs --unsafe-local"},
	}
	var b strings.Builder
	if err := writeRuntimes(&b, st); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	want := [][]string{
		{"NAME", "ISOLATION", "AVAILABLE", "DETAIL"},
		{"kubernetes", "pod", "no", "not built yet"},
		{"containerd", "container", "yes", "ready; the default (strongest available)"},
		{"docker", "container", "yes", "ready"},
		{"local", "none", "no", "needs --unsafe-local"},
	}
	if len(lines) != len(want) {
		t.Fatalf("got %d lines; want %d:\n%s", len(lines), len(want), b.String())
	}
	for i, cells := range want {
		got := strings.Join(strings.Fields(lines[i]), " ")
		if w := strings.Join(cells, " "); got != w {
			t.Errorf("line %d = %q; want %q", i, got, w)
		}
	}

	b.Reset()
	if err := writeRuntimesJSON(&b, st); err != nil {
		t.Fatal(err)
	}
	var rows []runtimeRow
	if err := json.Unmarshal([]byte(b.String()), &rows); err != nil {
		t.Fatal(err)
	}
	for i, r := range rows {
		if r.Name != st[i].Name || r.Available != st[i].Available || r.Reason != st[i].Reason || r.Auto != (r.Name == "containerd") {
			t.Errorf("row %d = %+v", i, r)
		}
	}
}

// TestRuntimeLs runs the command against this host's real engines: every
// backend is listed, whether available or not.
func TestRuntimeLs(t *testing.T) {
	tests := []struct {
		args     []string
		wantErr  bool
		wantLine string // the start of a line of the output, spaces collapsed
	}{
		{[]string{"ls"}, false, "local none: host processes no"},
		{[]string{"ls", "--json"}, false, `"name": "kubernetes",`},
		{[]string{"ls", "--unsafe-local", "--state-root", t.TempDir()}, false, "local none: host processes yes ready"},
		{[]string{"ls", "extra"}, true, ""},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			out, _, err := execute(t, runtimeCmd(), tt.args...)
			if (err != nil) != tt.wantErr {
				t.Fatalf("error = %v; want error %v", err, tt.wantErr)
			}
			if tt.wantErr {
				return
			}
			for _, name := range catalog.Names() {
				if !strings.Contains(out, name) {
					t.Errorf("output lacks %s:\n%s", name, out)
				}
			}
			if !strings.Contains(out, "not built yet") {
				t.Errorf("output lacks kubernetes's reason:\n%s", out)
			}
			found := false
			for l := range strings.SplitSeq(out, "\n") {
				found = found || strings.HasPrefix(strings.Join(strings.Fields(l), " "), tt.wantLine)
			}
			if !found {
				t.Errorf("output lacks the line %q:\n%s", tt.wantLine, out)
			}
		})
	}
}
