package forge

import "testing"

// TestGitLabMessage reads the shapes of GitLab's error bodies.
func TestGitLabMessage(t *testing.T) {
	for _, tc := range []struct{ body, want string }{
		{`{"message":"401 Unauthorized"}`, "401 Unauthorized"},
		{`{"message":["Another open merge request already exists for this source branch: !1"]}`,
			"Another open merge request already exists for this source branch: !1"},
		{`{"message":{"title":["can't be blank","is too short"],"base":["is invalid"]}}`, "base is invalid; title can't be blank; is too short"},
		{`{"error":"source_branch is missing, title is missing"}`, "source_branch is missing, title is missing"},
		{"Retry later\n", "Retry later"},
		{"<html><body>502 Bad Gateway</body></html>", ""},
		{`{"message": 42}`, "42"},
		{"", ""},
	} {
		if got := gitlabMessage([]byte(tc.body)); got != tc.want {
			t.Errorf("gitlabMessage(%s) = %q; want %q", tc.body, got, tc.want)
		}
	}
}
