//go:build !slim

package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/corral-sh/corral/api/cpapi"
	"github.com/corral-sh/corral/internal/auth"
	"github.com/corral-sh/corral/internal/secrets"
	"github.com/corral-sh/corral/internal/store/storetest"
)

// secretCLI runs `corral secret ...` with stdin from in.
func secretCLI(ctx context.Context, in io.Reader, args ...string) (stdout, stderr string, err error) {
	root := &cobra.Command{Use: "corral", SilenceUsage: true, SilenceErrors: true}
	root.AddCommand(secretCmd())
	if in == nil {
		in = strings.NewReader("")
	}
	var out, errOut bytes.Buffer
	root.SetArgs(append([]string{"secret"}, args...))
	root.SetIn(in)
	root.SetOut(&out)
	root.SetErr(&errOut)
	err = root.ExecuteContext(ctx)
	return out.String(), errOut.String(), err
}

func TestSecretCommands(t *testing.T) {
	env := startCP(t)
	ctx := testCtx(t, time.Minute)
	// The stored values, read the way the job engine reads them: the
	// server's own database and key.
	st := storetest.Open(t, "sqlite:"+filepath.Join(env.srv.DataDir, "corral.db"))
	key, err := secrets.LoadKey("", env.srv.DataDir)
	if err != nil {
		t.Fatal(err)
	}
	svc, err := secrets.New(st, key)
	if err != nil {
		t.Fatal(err)
	}
	stored := func(name string) string {
		t.Helper()
		v, err := svc.Get(ctx, auth.DefaultTenant, name)
		if err != nil {
			t.Fatalf("stored value of %s: %v", name, err)
		}
		return v
	}

	run := func(in string, args ...string) string {
		t.Helper()
		out, errOut, err := secretCLI(ctx, strings.NewReader(in), args...)
		if err != nil {
			t.Fatalf("corral secret %s: %v\n%s%s", strings.Join(args, " "), err, out, errOut)
		}
		return out
	}
	if out := run("", "set", "ARG_KEY", "from-the-command-line"); out != "created ARG_KEY\n" {
		t.Errorf("set with a value = %q; want created", out)
	}
	if out := run("", "set", "ARG_KEY", "second"); out != "replaced ARG_KEY\n" {
		t.Errorf("set again = %q; want replaced", out)
	}
	if got := stored("ARG_KEY"); got != "second" {
		t.Errorf("ARG_KEY = %q; want second", got)
	}

	for _, tc := range []struct {
		name, stdin, want string
		args              []string
	}{
		{"piped, newline trimmed", "piped-value\n", "piped-value", nil},
		{"dash, CRLF trimmed", "dash-value\r\n", "dash-value", []string{"-"}},
		{"only one newline trimmed", "two\n\n", "two\n", nil},
		{"inner newlines kept", "-----BEGIN KEY-----\nabc\n-----END KEY-----\n", "-----BEGIN KEY-----\nabc\n-----END KEY-----", nil},
		{"no newline", "exact", "exact", nil},
		{"the limit, plus a newline", strings.Repeat("k", secrets.MaxValueBytes) + "\n", strings.Repeat("k", secrets.MaxValueBytes), nil},
	} {
		run(tc.stdin, append([]string{"set", "STDIN_KEY"}, tc.args...)...)
		if got := stored("STDIN_KEY"); got != tc.want {
			t.Errorf("%s: stored %q; want %q", tc.name, shorten(got), shorten(tc.want))
		}
	}

	for _, tc := range []struct {
		name, stdin, want string
		args              []string
	}{
		{"empty stdin", "", "empty", []string{"set", "K"}},
		{"only a newline", "\n", "empty", []string{"set", "K", "-"}},
		{"over the limit", strings.Repeat("k", secrets.MaxValueBytes+1), "over 65536 bytes", []string{"set", "K"}},
		{"bad name", "v", "not valid", []string{"set", "bad-name", "v"}},
		{"NUL in the value", "a\x00b", "NUL", []string{"set", "K"}},
		{"rm unknown", "", "not found", []string{"rm", "NOPE"}},
		{"no name", "", "arg", []string{"set"}},
	} {
		_, _, err := secretCLI(ctx, strings.NewReader(tc.stdin), tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: corral secret %v = %v; want an error saying %q", tc.name, tc.args, err, tc.want)
		}
	}

	out := run("", "ls")
	if !strings.Contains(out, "NAME") || !strings.Contains(out, "ARG_KEY") || !strings.Contains(out, "STDIN_KEY") ||
		strings.Contains(out, "second") || strings.Contains(out, "kkkk") {
		t.Errorf("secret ls:\n%s\nwant both names and no value", out)
	}
	var list cpapi.SecretList
	if err := json.Unmarshal([]byte(run("", "ls", "--json")), &list); err != nil || len(list.Secrets) != 2 || list.Secrets[0].Name != "ARG_KEY" {
		t.Errorf("secret ls --json = %+v, %v; want ARG_KEY, STDIN_KEY", list, err)
	}
	var sec cpapi.Secret
	if err := json.Unmarshal([]byte(run("v", "set", "--json", "JSON_KEY")), &sec); err != nil || sec.Name != "JSON_KEY" {
		t.Errorf("secret set --json = %+v, %v", sec, err)
	}

	if out := run("", "rm", "ARG_KEY", "JSON_KEY"); out != "ARG_KEY\nJSON_KEY\n" {
		t.Errorf("secret rm = %q; want both names", out)
	}
	if _, err := svc.Get(ctx, auth.DefaultTenant, "ARG_KEY"); err == nil {
		t.Errorf("ARG_KEY is still stored after rm")
	}
}

func shorten(s string) string {
	if len(s) > 40 {
		return s[:20] + "..." + s[len(s)-20:]
	}
	return s
}
