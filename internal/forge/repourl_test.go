package forge_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/corral-sh/corral/internal/errdefs"
	"github.com/corral-sh/corral/internal/forge"
)

func TestParseRepoURL(t *testing.T) {
	for _, tc := range []struct {
		in                string
		host, owner, name string
	}{
		{"https://github.com/acme/app", "github.com", "acme", "app"},
		{"https://github.com/acme/app.git", "github.com", "acme", "app"},
		{"https://github.com/acme/app/", "github.com", "acme", "app"},
		{"https://GitHub.com/Acme/App.git", "github.com", "Acme", "App"},
		{"http://github.com/acme/app.git", "github.com", "acme", "app"},
		{"https://x-access-token:ghs_abc@github.com/acme/app.git", "github.com", "acme", "app"},
		{"ssh://git@github.com/acme/app.git", "github.com", "acme", "app"},
		{"ssh://git@ghe.example.com:2222/acme/app.git", "ghe.example.com:2222", "acme", "app"},
		{"git://github.com/acme/app.git", "github.com", "acme", "app"},
		{"git@github.com:acme/app.git", "github.com", "acme", "app"},
		{"git@github.com:acme/app", "github.com", "acme", "app"},
		{"github.com:acme/app.git", "github.com", "acme", "app"},
		{"https://ghe.example.com/platform-team/my.repo_v2.git", "ghe.example.com", "platform-team", "my.repo_v2"},
		{"https://127.0.0.1:8080/acme/app.git", "127.0.0.1:8080", "acme", "app"},
		{"https://github.com/acme/app.git.git", "github.com", "acme", "app.git"},
		{"https://github.com/octo_emu/app", "github.com", "octo_emu", "app"},
		// GitLab's nested groups, anywhere but on github.com
		{"https://gitlab.example.com/group/sub/repo.git", "gitlab.example.com", "group/sub", "repo"},
		{"git@gitlab.com:group/sub/deeper/my.repo.git", "gitlab.com", "group/sub/deeper", "my.repo"},
		{"ssh://git@gitlab.example.com:2222/group/sub/repo.git", "gitlab.example.com:2222", "group/sub", "repo"},
		{"https://gitlab.example.com/" + strings.Repeat("g/", 20) + "repo", "gitlab.example.com", strings.TrimSuffix(strings.Repeat("g/", 20), "/"), "repo"},
	} {
		r, err := forge.ParseRepoURL(tc.in)
		if err != nil || r.Host != tc.host || r.Owner != tc.owner || r.Name != tc.name {
			t.Errorf("ParseRepoURL(%q) = %+v, %v; want %s %s/%s", tc.in, r, err, tc.host, tc.owner, tc.name)
		}
	}
}

func TestParseRepoURLHostile(t *testing.T) {
	for _, in := range []string{
		"",
		"acme/app",
		"/srv/git/acme/app.git",
		"./app",
		"file:///srv/git/acme/app.git",
		"ext::sh -c touch% /tmp/pwned",
		"ftp://github.com/acme/app.git",
		"https://github.com/acme",
		"https://github.com/acme/",
		"https://github.com/",
		"https://github.com",
		"https://github.com/acme/app/pulls",
		"https://github.com/acme/app/tree/main",
		"https://github.com/../app",
		"https://github.com/acme/..",
		"https://github.com/acme/.",
		"https://github.com/acme/.git",
		"https://github.com/./app",
		"https://github.com/acme/app/../../admin",
		"https://github.com/acme%2F..%2Fadmin/app",
		"https://github.com/acme/app%2Fpulls",
		"https://github.com/acme/app?x=1",
		"https://github.com/acme/app#frag",
		"https://github.com//acme/app",
		"https://github.com/acme//app",
		"https://github.com/ac me/app",
		"https://github.com/acme/app\n",
		"https://github.com/acme/app\x00",
		"https://github.com/-acme/app",
		"https://github.com/acme/ap:p",
		"https://github.com/acme/app;rm -rf",
		"https://github.com/acme/ápp",
		"https://" + strings.Repeat("a", 3000) + "/acme/app",
		"https://bad_host!/acme/app",
		"git@github.com:/acme/app.git",
		"git@github.com:acme/app/extra.git",
		"git@:acme/app",
		"git@github.com:../../etc/passwd",
		"C:\\repos\\acme\\app",
		"https://github.com/acme/team/app",
		"ssh://git@github.com:22/acme/team/app.git",
		"https://gitlab.example.com/group/../repo",
		"https://gitlab.example.com/group/-/merge_requests",
		"https://gitlab.example.com//group/repo",
		"https://gitlab.example.com/group//repo",
		"https://gitlab.example.com/" + strings.Repeat("g/", 21) + "repo",
	} {
		r, err := forge.ParseRepoURL(in)
		if !errors.Is(err, errdefs.ErrInvalid) {
			t.Errorf("ParseRepoURL(%q) = %+v, %v; want ErrInvalid", in, r, err)
		}
	}
}

// TestParseRepoURLHidesCredentials: a clone URL may carry a token; the
// error shows the URL without it.
func TestParseRepoURLHidesCredentials(t *testing.T) {
	for _, in := range []string{
		"https://ghp_SECRETTOKEN123@github.com/acme/app/extra",
		"https://x-access-token:ghp_SECRETTOKEN123@github.com/acme",
		"https://ghp_SECRETTOKEN123@github.com/acme/app?q",
		"https://ghp_SECRETTOKEN123@github.com/%zz/app",
		"ghp_SECRETTOKEN123@github.com:acme",
	} {
		_, err := forge.ParseRepoURL(in)
		if err == nil {
			t.Errorf("ParseRepoURL(%q) = nil; want an error", in)
			continue
		}
		if strings.Contains(err.Error(), "SECRETTOKEN") {
			t.Errorf("ParseRepoURL(%q) error shows the credentials: %v", in, err)
		}
		if !strings.Contains(err.Error(), "***@") {
			t.Errorf("ParseRepoURL(%q) error %q does not show where the credentials were", in, err)
		}
	}
}
