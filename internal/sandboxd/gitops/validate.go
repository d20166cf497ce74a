package gitops

import (
	"net/url"
	"path"
	"regexp"
	"strings"
	"time"

	"github.com/corral-sh/corral/api/sandboxapi"
	"github.com/corral-sh/corral/internal/errdefs"
)

// Limits on what a request may ask for.
const (
	maxRefLen     = 255
	maxURLLen     = 4096
	maxSecretLen  = 4096
	maxNameLen    = 256
	maxMessageLen = 1 << 20
	maxPaths      = 10000
	// MaxTimeout bounds any request's timeout_ms.
	MaxTimeout = time.Hour
	// DefaultUsername answers git's username prompt when credentials have
	// only a password (a token).
	DefaultUsername = "x-access-token"
)

// checkBranchName validates a branch name as `git check-ref-format
// --branch` would, and refuses a leading '-' so a name can never be taken
// for an option.
func checkBranchName(what, name string) error {
	if name == "HEAD" || strings.HasPrefix(name, "-") {
		return errdefs.Invalidf("%s %q is not a valid branch name", what, name)
	}
	if reason := refNameProblem(name); reason != "" {
		return errdefs.Invalidf("%s %q is not a valid branch name: %s", what, name, reason)
	}
	return nil
}

// checkRemoteName validates a remote name as git does (refs/remotes/<name>
// must be a valid ref), without a leading '-'.
func checkRemoteName(name string) error {
	if strings.HasPrefix(name, "-") || refNameProblem(name) != "" {
		return errdefs.Invalidf("remote %q is not a valid remote name", name)
	}
	return nil
}

// refNameProblem describes why name breaks git's ref name rules
// (git-check-ref-format(1)), or returns "".
func refNameProblem(name string) string {
	switch {
	case name == "":
		return "it is empty"
	case len(name) > maxRefLen:
		return "it is too long"
	case name == "@":
		return `it is "@"`
	case strings.Contains(name, ".."):
		return `it contains ".."`
	case strings.Contains(name, "@{"):
		return `it contains "@{"`
	case strings.HasPrefix(name, "/") || strings.HasSuffix(name, "/") || strings.Contains(name, "//"):
		return "it has an empty path component"
	case strings.HasSuffix(name, "."):
		return `it ends with "."`
	}
	for _, r := range name {
		if r < 0x20 || r == 0x7f || strings.ContainsRune(" ~^:?*[\\", r) {
			return "it contains a forbidden character"
		}
	}
	for c := range strings.SplitSeq(name, "/") {
		if strings.HasPrefix(c, ".") || strings.HasSuffix(c, ".lock") {
			return `a component starts with "." or ends with ".lock"`
		}
	}
	return ""
}

// checkRev validates a revision expression ("main", "HEAD~2", a commit id,
// "origin/main"): no leading '-', no whitespace or control characters.
// Whether it names anything is git's to say.
func checkRev(what, rev string) error {
	if rev == "" || len(rev) > maxRefLen || strings.HasPrefix(rev, "-") {
		return errdefs.Invalidf("%s %q is not a valid revision", what, rev)
	}
	for _, r := range rev {
		if r <= 0x20 || r == 0x7f {
			return errdefs.Invalidf("%s %q is not a valid revision", what, rev)
		}
	}
	return nil
}

// hexRev matches what may be an abbreviated or full commit id.
var hexRev = regexp.MustCompile(`^[0-9a-fA-F]{4,64}$`)

// checkRelPaths validates pathspecs relative to the repository directory.
// They are passed to git literally (GIT_LITERAL_PATHSPECS), after "--".
func checkRelPaths(paths []string) error {
	if len(paths) > maxPaths {
		return errdefs.Invalidf("at most %d paths", maxPaths)
	}
	for _, p := range paths {
		switch {
		case p == "" || len(p) > 4096 || strings.IndexByte(p, 0) >= 0:
			return errdefs.Invalidf("path %q is not valid", p)
		case strings.HasPrefix(p, "/"):
			return errdefs.Invalidf("path %q must be relative to the repository directory", p)
		}
		if c := path.Clean(p); c == ".." || strings.HasPrefix(c, "../") {
			return errdefs.Forbiddenf("path %q escapes the repository", p)
		}
	}
	return nil
}

// checkIdentity validates a commit author.
func checkIdentity(id *sandboxapi.GitIdentity) error {
	if id == nil {
		return nil
	}
	for _, f := range []struct{ name, v string }{{"author.name", id.Name}, {"author.email", id.Email}} {
		if strings.TrimSpace(f.v) == "" || len(f.v) > maxNameLen || strings.ContainsAny(f.v, "<>\n\r\x00") {
			return errdefs.Invalidf("%s must be non-empty, at most %d bytes, without '<', '>' or line breaks", f.name, maxNameLen)
		}
	}
	return nil
}

// timeout turns a request's timeout_ms into a duration, def when zero.
func timeout(ms int64, def time.Duration) (time.Duration, error) {
	switch {
	case ms < 0:
		return 0, errdefs.Invalidf("timeout_ms must not be negative")
	case ms == 0:
		return def, nil
	case time.Duration(ms) > MaxTimeout/time.Millisecond:
		return 0, errdefs.Invalidf("timeout_ms must be at most %d", MaxTimeout.Milliseconds())
	}
	return time.Duration(ms) * time.Millisecond, nil
}

// remote is a validated remote repository URL.
type remote struct {
	// url is what git is given: for http(s) without any userinfo.
	url string
	// scheme is http, https, ssh or git; host is the lower-cased host with
	// its port when not the scheme's default. Credentials are released to
	// this scheme and host only.
	scheme, host string
}

// creds are the credentials of one command with the remote they belong to.
type creds struct {
	username, password string
	remote             remote
}

// parseRemote validates a remote URL: http(s)://, ssh://, git:// or
// scp-like user@host:path. Local paths, file:// and transport helpers
// (ext::) are refused: they would reach outside the sandbox's root or run
// commands. The user[:password] of an http(s) URL is removed from it and
// returned (see withURLCredentials), so it never reaches git's
// configuration.
func parseRemote(raw string) (remote, *sandboxapi.GitCredentials, error) {
	bad := func(why string) (remote, *sandboxapi.GitCredentials, error) {
		return remote{}, nil, errdefs.Invalidf("url %q is not valid: %s", redactURL(raw), why)
	}
	switch {
	case raw == "":
		return remote{}, nil, errdefs.Invalidf("url is required")
	case len(raw) > maxURLLen:
		return bad("it is too long")
	case strings.HasPrefix(raw, "-"):
		return bad(`it starts with "-"`)
	}
	for _, r := range raw {
		if r <= 0x20 || r == 0x7f {
			return bad("it contains whitespace or control characters")
		}
	}
	if transportHelper.MatchString(raw) {
		return bad("transport helpers (<transport>::<address>) are not allowed")
	}
	scheme, _, ok := strings.Cut(raw, "://")
	if !ok || strings.Contains(scheme, ":") {
		return parseSCP(raw)
	}
	switch strings.ToLower(scheme) {
	case "http", "https", "ssh", "git":
	default:
		return bad("use https://, http://, ssh://, git:// or user@host:path")
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.Opaque != "" {
		return bad("it has no host")
	}
	r := remote{scheme: strings.ToLower(u.Scheme), host: normalHost(u)}
	var cred *sandboxapi.GitCredentials
	if (r.scheme == "http" || r.scheme == "https") && u.User != nil {
		pw, _ := u.User.Password()
		cred = &sandboxapi.GitCredentials{Username: u.User.Username(), Password: pw}
		u.User = nil
	}
	r.url = u.String()
	return r, cred, nil
}

// transportHelper matches git's "<transport>::<address>" syntax (ext::,
// fd::), which runs a helper program.
var transportHelper = regexp.MustCompile(`^[A-Za-z0-9+.-]+::`)

// scpLike matches git's scp-like syntax: [user@]host:path, with no slash
// before the colon (git would take that for a local path).
var scpLike = regexp.MustCompile(`^(?:[^@/:]+@)?([^@/:\[\]]+|\[[^/\]]+\]):`)

func parseSCP(raw string) (remote, *sandboxapi.GitCredentials, error) {
	m := scpLike.FindStringSubmatch(raw)
	if m == nil {
		return remote{}, nil, errdefs.Invalidf("url %q is not valid: use https://, http://, ssh://, git:// or user@host:path", redactURL(raw))
	}
	return remote{url: raw, scheme: "ssh", host: strings.ToLower(strings.Trim(m[1], "[]"))}, nil, nil
}

// normalHost is u's lower-cased host, with the port only when it is not
// the scheme's default.
func normalHost(u *url.URL) string {
	host, port := strings.ToLower(u.Hostname()), u.Port()
	switch {
	case port == "",
		port == "80" && strings.EqualFold(u.Scheme, "http"),
		port == "443" && strings.EqualFold(u.Scheme, "https"):
		if strings.Contains(host, ":") {
			return "[" + host + "]"
		}
		return host
	}
	if strings.Contains(host, ":") {
		return "[" + host + "]:" + port
	}
	return host + ":" + port
}

// withURLCredentials combines the user[:password] written into a URL
// with the credentials given apart: a password in both is an error; a
// user name in the URL names the given credentials' user; a user name
// alone is a token (https://TOKEN@host).
func withURLCredentials(fromURL, given *sandboxapi.GitCredentials) (*sandboxapi.GitCredentials, error) {
	switch {
	case fromURL == nil:
		return given, nil
	case fromURL.Password != "" && given != nil:
		return nil, errdefs.Invalidf("credentials are given both in url and in credentials")
	case fromURL.Password != "":
		return fromURL, nil
	case given != nil:
		c := *given
		if c.Username == "" {
			c.Username = fromURL.Username
		}
		return &c, nil
	case fromURL.Username != "":
		return &sandboxapi.GitCredentials{Password: fromURL.Username}, nil
	}
	return nil, nil
}

// credentials validates c for remote r (nil c: none).
func credentials(c *sandboxapi.GitCredentials, r remote) (*creds, error) {
	if c == nil {
		return nil, nil
	}
	if r.scheme != "http" && r.scheme != "https" {
		return nil, errdefs.Invalidf("credentials apply to http(s) URLs only; %s URLs authenticate with keys", r.scheme)
	}
	if c.Password == "" {
		return nil, errdefs.Invalidf("credentials.password is required")
	}
	for _, v := range []string{c.Username, c.Password} {
		if len(v) > maxSecretLen || strings.ContainsAny(v, "\n\r\x00") {
			return nil, errdefs.Invalidf("credentials must be at most %d bytes, without line breaks or NUL", maxSecretLen)
		}
	}
	user := c.Username
	if user == "" {
		user = DefaultUsername
	}
	return &creds{username: user, password: c.Password, remote: r}, nil
}
