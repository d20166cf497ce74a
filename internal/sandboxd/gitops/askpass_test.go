package gitops

import (
	"bytes"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// startTestAskpass serves creds for https://github.com and points the
// askpass client of this process at it.
func startTestAskpass(t *testing.T) *askpass {
	t.Helper()
	rm, _, _ := parseRemote("https://github.com/o/r.git")
	tmp := t.TempDir()
	a, err := startAskpass(tmp, &creds{username: "bot", password: "tok-123", remote: rm}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		a.close()
		if entries, _ := os.ReadDir(tmp); len(entries) != 0 {
			t.Errorf("askpass left %d entries in its temporary directory", len(entries))
		}
	})
	t.Setenv(AskpassSocketEnv, a.socket)
	return a
}

func TestAskpassAnswersItsCommand(t *testing.T) {
	a := startTestAskpass(t)
	a.started(os.Getpid()) // this process plays git
	for _, tc := range []struct{ prompt, want string }{
		{"Username for 'https://github.com': ", "bot\n"},
		{"Password for 'https://bot@github.com': ", "tok-123\n"},
	} {
		var out bytes.Buffer
		handled, err := Askpass([]string{tc.prompt}, &out)
		if !handled || err != nil || out.String() != tc.want {
			t.Errorf("Askpass(%q) = %v, %v, %q; want handled, %q", tc.prompt, handled, err, out.String(), tc.want)
		}
	}
	// A rewritten URL (insteadOf) names another host: nothing for it.
	var out bytes.Buffer
	if handled, err := Askpass([]string{"Password for 'https://evil.example': "}, &out); !handled || err == nil || out.Len() != 0 {
		t.Errorf("Askpass(other host) = %v, %v, %q; want refused", handled, err, out.String())
	}
	if handled, err := Askpass([]string{"Password for 'http://github.com': "}, &out); err == nil || out.Len() != 0 {
		t.Errorf("Askpass(other scheme) = %v, %v, %q; want refused", handled, err, out.String())
	}
	// Git asks twice per authentication; a loop asking more gets nothing.
	if _, err := Askpass([]string{"Password for 'https://github.com': "}, &out); err == nil || out.Len() != 0 {
		t.Errorf("fifth prompt answered %q, %v; want refused", out.String(), err)
	}
}

func TestAskpassRefusesStrangers(t *testing.T) {
	a := startTestAskpass(t)
	// Git is some other process; this test process is not its descendant.
	other := exec.Command("sleep", "60")
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Process.Kill(); other.Wait() })
	a.started(other.Process.Pid)
	var out bytes.Buffer
	handled, err := Askpass([]string{"Password for 'https://github.com': "}, &out)
	if !handled || err == nil || out.Len() != 0 || strings.Contains(err.Error(), "tok-123") {
		t.Errorf("Askpass from a stranger = %v, %v, %q; want refused", handled, err, out.String())
	}
}

func TestAskpassLeavesOtherCommandLinesAlone(t *testing.T) {
	a := startTestAskpass(t)
	a.started(os.Getpid())
	for _, args := range [][]string{
		{},
		{"sandboxd"},
		{"exec", "--", "ls"},
		{"Password for 'https://github.com': ", "extra"},
		{"Enter passphrase for key '/k': "},
	} {
		var out bytes.Buffer
		if handled, err := Askpass(args, &out); handled || err != nil || out.Len() != 0 {
			t.Errorf("Askpass(%q) = %v, %v, %q; want not handled", args, handled, err, out.String())
		}
	}
	t.Setenv(AskpassSocketEnv, "")
	if handled, _ := Askpass([]string{"Password for 'https://github.com': "}, &bytes.Buffer{}); handled {
		t.Errorf("Askpass without the socket variable handled a prompt")
	}
}
