package gitops

import (
	"encoding/base64"
	"net/url"
	"regexp"
	"slices"
	"strings"
)

// scrubber removes one command's credentials from text before it leaves
// the package: in an error message, a response or a log line. Git does not
// print passwords, but a remote's messages, a misconfigured proxy or a
// future git version might; nothing is trusted to be clean.
type scrubber struct {
	secrets []string // longest first
}

// newScrubber scrubs c's password in the forms it can travel in: as is,
// URL-escaped and inside a basic authorization header.
func newScrubber(c *creds) scrubber {
	if c == nil {
		return scrubber{}
	}
	s := scrubber{secrets: []string{
		c.password,
		url.QueryEscape(c.password),
		url.PathEscape(c.password),
		base64.StdEncoding.EncodeToString([]byte(c.username + ":" + c.password)),
		base64.StdEncoding.EncodeToString([]byte(c.password)),
	}}
	slices.SortFunc(s.secrets, func(a, b string) int { return len(b) - len(a) })
	s.secrets = slices.Compact(s.secrets)
	return s
}

// userinfo matches the user[:password]@ part of a URL.
var userinfo = regexp.MustCompile(`([A-Za-z][A-Za-z0-9+.-]*://)[^/?#@\s'"]*@`)

// scrub returns text without the secrets and without the userinfo of any
// URL in it.
func (s scrubber) scrub(text string) string {
	for _, sec := range s.secrets {
		if sec != "" {
			text = strings.ReplaceAll(text, sec, "***")
		}
	}
	return userinfo.ReplaceAllString(text, "${1}***@")
}

// redactURL returns raw without the userinfo of any URL in it.
func redactURL(raw string) string { return scrubber{}.scrub(raw) }
