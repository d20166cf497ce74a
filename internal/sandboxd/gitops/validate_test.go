package gitops

import (
	"errors"
	"strings"
	"testing"

	"github.com/corral-sh/corral/api/sandboxapi"
	"github.com/corral-sh/corral/internal/errdefs"
)

func TestCheckBranchName(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"main", true},
		{"corral/job_123", true},
		{"feature/a.b-c_d", true},
		{"v1.0", true},
		{"", false},
		{"-x", false},
		{"--upload-pack=evil", false},
		{"HEAD", false},
		{"@", false},
		{"a..b", false},
		{"a@{1}", false},
		{"/a", false},
		{"a/", false},
		{"a//b", false},
		{"a.", false},
		{".a", false},
		{"a/.b", false},
		{"a.lock", false},
		{"a/b.lock/c", false},
		{"a b", false},
		{"a~1", false},
		{"a^", false},
		{"a:b", false},
		{"a?", false},
		{"a*", false},
		{"a[", false},
		{`a\b`, false},
		{"a\x00b", false},
		{"a\nb", false},
		{"a\x7f", false},
		{strings.Repeat("a", 256), false},
	} {
		err := checkBranchName("branch", tc.name)
		if (err == nil) != tc.ok {
			t.Errorf("checkBranchName(%q) = %v; want ok %v", tc.name, err, tc.ok)
		}
		if err != nil && !errors.Is(err, errdefs.ErrInvalid) {
			t.Errorf("checkBranchName(%q) = %v; want ErrInvalid", tc.name, err)
		}
	}
}

func TestCheckRev(t *testing.T) {
	for _, tc := range []struct {
		rev string
		ok  bool
	}{
		{"HEAD", true},
		{"HEAD~2", true},
		{"main^{commit}", true},
		{"origin/main", true},
		{"0123abcd", true},
		{"main..feature", true},
		{"", false},
		{"-n", false},
		{"--output=/etc/passwd", false},
		{"a b", false},
		{"a\tb", false},
		{"a\nb", false},
	} {
		if err := checkRev("ref", tc.rev); (err == nil) != tc.ok {
			t.Errorf("checkRev(%q) = %v; want ok %v", tc.rev, err, tc.ok)
		}
	}
}

func TestCheckRelPaths(t *testing.T) {
	for _, tc := range []struct {
		path  string
		class error // nil: valid
	}{
		{"a.txt", nil},
		{"dir/b.txt", nil},
		{".", nil},
		{"-rf", nil}, // after "--" and literal: a file name like any other
		{":(glob)*", nil},
		{"a/../b", nil},
		{"", errdefs.ErrInvalid},
		{"/etc/passwd", errdefs.ErrInvalid},
		{"a\x00b", errdefs.ErrInvalid},
		{"..", errdefs.ErrForbidden},
		{"../x", errdefs.ErrForbidden},
		{"a/../../x", errdefs.ErrForbidden},
	} {
		err := checkRelPaths([]string{tc.path})
		switch {
		case tc.class == nil && err != nil:
			t.Errorf("checkRelPaths(%q) = %v; want ok", tc.path, err)
		case tc.class != nil && !errors.Is(err, tc.class):
			t.Errorf("checkRelPaths(%q) = %v; want %v", tc.path, err, tc.class)
		}
	}
}

func TestParseRemote(t *testing.T) {
	for _, tc := range []struct {
		raw               string
		url, scheme, host string
		user, password    string // extracted credentials
		invalid           bool
	}{
		{raw: "https://github.com/o/r.git", url: "https://github.com/o/r.git", scheme: "https", host: "github.com"},
		{raw: "HTTPS://GitHub.com:443/o/r", url: "https://GitHub.com:443/o/r", scheme: "https", host: "github.com"},
		{raw: "http://127.0.0.1:8080/r.git", url: "http://127.0.0.1:8080/r.git", scheme: "http", host: "127.0.0.1:8080"},
		{raw: "http://[::1]:8080/r.git", url: "http://[::1]:8080/r.git", scheme: "http", host: "[::1]:8080"},
		{raw: "https://x-access-token:ghs_abc@github.com/o/r.git", url: "https://github.com/o/r.git", scheme: "https", host: "github.com", user: "x-access-token", password: "ghs_abc"},
		{raw: "https://ghp_tok@github.com/o/r.git", url: "https://github.com/o/r.git", scheme: "https", host: "github.com", user: "ghp_tok"},
		{raw: "ssh://git@github.com/o/r.git", url: "ssh://git@github.com/o/r.git", scheme: "ssh", host: "github.com"},
		{raw: "git://example.com/r.git", url: "git://example.com/r.git", scheme: "git", host: "example.com"},
		{raw: "git@github.com:o/r.git", url: "git@github.com:o/r.git", scheme: "ssh", host: "github.com"},
		{raw: "", invalid: true},
		{raw: "--upload-pack=touch /tmp/pwned", invalid: true},
		{raw: "-u", invalid: true},
		{raw: "ext::sh -c touch% /tmp/pwned", invalid: true},
		{raw: "ext::sh", invalid: true},
		{raw: "file:///etc", invalid: true},
		{raw: "/etc/passwd", invalid: true},
		{raw: "../other", invalid: true},
		{raw: "./a:b", invalid: true},
		{raw: "fd::17", invalid: true},
		{raw: "https://", invalid: true},
		{raw: "https://host/a b", invalid: true},
		{raw: "https://host/a\nb", invalid: true},
		{raw: "ftp://host/r", invalid: true},
	} {
		r, c, err := parseRemote(tc.raw)
		if tc.invalid {
			if !errors.Is(err, errdefs.ErrInvalid) {
				t.Errorf("parseRemote(%q) = %+v, %v; want ErrInvalid", tc.raw, r, err)
			}
			continue
		}
		if err != nil || r.url != tc.url || r.scheme != tc.scheme || r.host != tc.host {
			t.Errorf("parseRemote(%q) = %+v, %v; want url %q scheme %q host %q", tc.raw, r, err, tc.url, tc.scheme, tc.host)
		}
		var user, pw string
		if c != nil {
			user, pw = c.Username, c.Password
		}
		if user != tc.user || pw != tc.password {
			t.Errorf("parseRemote(%q) credentials = %q:%q; want %q:%q", tc.raw, user, pw, tc.user, tc.password)
		}
	}
}

func TestParseRemoteMessagesHideCredentials(t *testing.T) {
	_, _, err := parseRemote("ftp://user:hunter2-secret@host/r")
	if err == nil || strings.Contains(err.Error(), "hunter2-secret") {
		t.Errorf("parseRemote error = %v; want an error without the password", err)
	}
}

func TestCredentials(t *testing.T) {
	https, _, _ := parseRemote("https://github.com/o/r")
	ssh, _, _ := parseRemote("git@github.com:o/r")
	if c, err := credentials(&sandboxapi.GitCredentials{Password: "tok"}, https); err != nil || c.username != DefaultUsername {
		t.Errorf("credentials(token only) = %+v, %v; want username %q", c, err, DefaultUsername)
	}
	for _, tc := range []struct {
		name string
		c    *sandboxapi.GitCredentials
		r    remote
	}{
		{"ssh", &sandboxapi.GitCredentials{Password: "tok"}, ssh},
		{"no password", &sandboxapi.GitCredentials{Username: "u"}, https},
		{"newline", &sandboxapi.GitCredentials{Password: "a\nb"}, https},
		{"huge", &sandboxapi.GitCredentials{Password: strings.Repeat("x", maxSecretLen+1)}, https},
	} {
		if _, err := credentials(tc.c, tc.r); !errors.Is(err, errdefs.ErrInvalid) {
			t.Errorf("credentials(%s) = %v; want ErrInvalid", tc.name, err)
		}
	}
}

func TestParsePrompt(t *testing.T) {
	for _, tc := range []struct {
		prompt, kind, scheme, host string
		ok                         bool
	}{
		{"Username for 'https://github.com': ", "Username", "https", "github.com", true},
		{"Password for 'https://x-access-token@github.com': ", "Password", "https", "github.com", true},
		{"Password for 'http://u@127.0.0.1:4000': ", "Password", "http", "127.0.0.1:4000", true},
		{"Password for 'https://github.com:443': ", "Password", "https", "github.com", true},
		{"Enter passphrase for key '/home/a/.ssh/id': ", "", "", "", false},
		{"Username for 'https://github.com'", "", "", "", false},
		{"Username for '': ", "", "", "", false},
		{"sandboxd", "", "", "", false},
	} {
		kind, r, ok := parsePrompt(tc.prompt)
		if ok != tc.ok || kind != tc.kind || r.scheme != tc.scheme || r.host != tc.host {
			t.Errorf("parsePrompt(%q) = %q, %+v, %v; want %q, %s://%s, %v", tc.prompt, kind, r, ok, tc.kind, tc.scheme, tc.host, tc.ok)
		}
	}
}

func TestScrub(t *testing.T) {
	s := newScrubber(&creds{username: "bot", password: "p@ss/w0rd+"})
	for _, in := range []string{
		"fatal: p@ss/w0rd+",
		"url https://bot:p%40ss%2Fw0rd+@host/x",
		"Authorization: Basic Ym90OnBAc3MvdzByZCs=",
		"q=p%40ss%2Fw0rd%2B",
	} {
		out := s.scrub(in)
		for _, bad := range []string{"p@ss/w0rd+", "p%40ss%2Fw0rd", "Ym90OnBAc3MvdzByZCs="} {
			if strings.Contains(out, bad) {
				t.Errorf("scrub(%q) = %q; still holds %q", in, out, bad)
			}
		}
	}
	if got := redactURL("fatal: unable to access 'https://user:tok@github.com/o/r/': 403"); got != "fatal: unable to access 'https://***@github.com/o/r/': 403" {
		t.Errorf("redactURL = %q", got)
	}
	if got := redactURL("https://github.com/o/a@b"); got != "https://github.com/o/a@b" {
		t.Errorf("redactURL of an @ in a path = %q; want it unchanged", got)
	}
}

func TestParseStatus(t *testing.T) {
	out := strings.Join([]string{
		"# branch.oid 1111111111111111111111111111111111111111",
		"# branch.head feature",
		"# branch.upstream origin/feature",
		"# branch.ab +2 -3",
		"1 .M N... 100644 100644 100644 aaaa bbbb with space.txt",
		"1 A. N... 000000 100644 100644 0000 cccc new.txt",
		"1 D. N... 100644 000000 000000 dddd 0000 gone.txt",
		"2 R. N... 100644 100644 100644 eeee eeee R100 renamed.txt", "orig.txt",
		"u UU N... 100644 100644 100644 100644 1 2 3 conflict.txt",
		"? untracked/file.bin",
		"",
	}, "\x00")
	st := parseStatus(out)
	want := []sandboxapi.GitFileStatus{
		{Path: "with space.txt", Worktree: sandboxapi.GitModified},
		{Path: "new.txt", Index: sandboxapi.GitAdded},
		{Path: "gone.txt", Index: sandboxapi.GitDeleted},
		{Path: "renamed.txt", OrigPath: "orig.txt", Index: sandboxapi.GitRenamed},
		{Path: "conflict.txt", Index: sandboxapi.GitUnmerged, Worktree: sandboxapi.GitUnmerged},
		{Path: "untracked/file.bin", Worktree: sandboxapi.GitUntracked},
	}
	if st.Branch != "feature" || st.Head != strings.Repeat("1", 40) || st.Upstream != "origin/feature" || st.Ahead != 2 || st.Behind != 3 || st.Clean {
		t.Errorf("parseStatus header = %+v; want feature at 111..., origin/feature +2 -3, not clean", st)
	}
	if len(st.Files) != len(want) {
		t.Fatalf("parseStatus files = %+v; want %+v", st.Files, want)
	}
	for i := range want {
		if st.Files[i] != want[i] {
			t.Errorf("file %d = %+v; want %+v", i, st.Files[i], want[i])
		}
	}
	empty := parseStatus("# branch.oid (initial)\x00# branch.head (detached)\x00")
	if empty.Head != "" || empty.Branch != "" || !empty.Clean || empty.Files == nil {
		t.Errorf("parseStatus(initial, detached) = %+v; want empty head and branch, clean, files []", empty)
	}
}

func TestWithURLCredentials(t *testing.T) {
	given := &sandboxapi.GitCredentials{Password: "tok"}
	for _, tc := range []struct {
		name           string
		fromURL, given *sandboxapi.GitCredentials
		want           *sandboxapi.GitCredentials
		invalid        bool
	}{
		{"none", nil, nil, nil, false},
		{"given only", nil, given, given, false},
		{"user and password in the url", &sandboxapi.GitCredentials{Username: "u", Password: "p"}, nil, &sandboxapi.GitCredentials{Username: "u", Password: "p"}, false},
		{"passwords twice", &sandboxapi.GitCredentials{Username: "u", Password: "p"}, given, nil, true},
		{"user in the url, token apart", &sandboxapi.GitCredentials{Username: "u"}, given, &sandboxapi.GitCredentials{Username: "u", Password: "tok"}, false},
		{"token as the user name", &sandboxapi.GitCredentials{Username: "ghp_x"}, nil, &sandboxapi.GitCredentials{Password: "ghp_x"}, false},
	} {
		got, err := withURLCredentials(tc.fromURL, tc.given)
		switch {
		case tc.invalid:
			if !errors.Is(err, errdefs.ErrInvalid) {
				t.Errorf("withURLCredentials(%s) = %+v, %v; want ErrInvalid", tc.name, got, err)
			}
		case err != nil || (got == nil) != (tc.want == nil) || (got != nil && *got != *tc.want):
			t.Errorf("withURLCredentials(%s) = %+v, %v; want %+v", tc.name, got, err, tc.want)
		}
	}
}
