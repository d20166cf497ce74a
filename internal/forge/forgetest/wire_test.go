package forgetest_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/corral-sh/corral/internal/forge/forgetest"
)

// call makes one plain HTTP request with the header given ("Name: value",
// or "" for none) and returns the status, the answer's headers and its body
// read as a JSON object (nil when it is not one).
func call(t *testing.T, method, url, header, body string) (int, http.Header, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if name, value, ok := strings.Cut(header, ": "); ok {
		req.Header.Set(name, value)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	var v map[string]any
	_ = json.Unmarshal(data, &v)
	return resp.StatusCode, resp.Header, v
}

// TestWire checks each server's answers, error bodies above all, with
// plain HTTP. The requests of a forge go in order to one server of it.
func TestWire(t *testing.T) {
	// The headers requests bear.
	const (
		none         = ""
		bearer       = "Authorization: Bearer " + forgetest.DefaultToken
		token        = "Authorization: token " + forgetest.DefaultToken
		basic        = "Authorization: Basic " + forgetest.DefaultToken
		private      = "PRIVATE-TOKEN: " + forgetest.DefaultToken
		wrongBearer  = "Authorization: Bearer nope"
		wrongPrivate = "PRIVATE-TOKEN: nope"
	)
	servers := map[string]*forgetest.Server{
		"GitHub": forgetest.Start(t, forgetest.Options{Repos: []string{"acme/app"}}),
		"GitLab": forgetest.StartGitLab(t, forgetest.Options{Repos: []string{"acme/app"}}),
		"Gitea":  forgetest.StartGitea(t, forgetest.Options{Repos: []string{"acme/app"}}),
	}
	// errorBody tells each forge's error body.
	errorBody := map[string]func(s *forgetest.Server, body map[string]any) bool{
		"GitHub": func(_ *forgetest.Server, body map[string]any) bool {
			return body["documentation_url"] != nil && body["status"] != nil
		},
		"GitLab": func(_ *forgetest.Server, body map[string]any) bool {
			return body["message"] != nil || body["error"] != nil
		},
		"Gitea": func(s *forgetest.Server, body map[string]any) bool { return body["url"] == s.URL+"/api/swagger" },
	}
	for _, tc := range []struct {
		forge, method, path, header string
		body                        string // JSON with ' for ", "" for none
		status                      int
		message                     string // the body's "message", "<nil>" for none
	}{
		{"GitHub", "GET", "/repos/acme/app", none, "", 401, "Requires authentication"},
		{"GitHub", "GET", "/repos/acme/app", wrongBearer, "", 401, "Bad credentials"},
		{"GitHub", "GET", "/api/v3/repos/acme/app", basic, "", 401, "Bad credentials"},
		{"GitHub", "GET", "/api/v3/repos/acme/app", token, "", 200, "<nil>"},
		{"GitHub", "GET", "/repos/acme/nope", bearer, "", 404, "Not Found"},
		{"GitHub", "GET", "/user", bearer, "", 404, "Not Found"},
		{"GitHub", "POST", "/api/v3/repos/acme/app/pulls", bearer, "{", 400, "Problems parsing JSON"},
		{"GitHub", "POST", "/repos/acme/app/pulls", bearer, "{'head':'x','base':'main'}", 422, "Validation Failed"},
		{"GitHub", "POST", "/repos/acme/app/pulls", bearer, "{'title':'t','head':'main','base':'main'}", 422, "Validation Failed"},
		{"GitHub", "POST", "/api/v3/repos/acme/app/pulls", bearer, "{'title':'t','head':'x','base':'main'}", 201, "<nil>"},
		{"GitHub", "POST", "/api/v3/repos/acme/app/pulls", bearer, "{'title':'t','head':'x','base':'main'}", 422, "Validation Failed"},
		{"GitLab", "GET", "/api/v4/projects/acme%2Fapp", none, "", 401, "401 Unauthorized"},
		{"GitLab", "GET", "/api/v4/projects/acme%2Fapp", wrongPrivate, "", 401, "401 Unauthorized"},
		{"GitLab", "GET", "/api/v4/projects/acme%2Fapp", token, "", 401, "401 Unauthorized"},
		{"GitLab", "GET", "/api/v4/projects/acme%2Fapp", bearer, "", 200, "<nil>"},
		{"GitLab", "GET", "/api/v4/projects/acme%2Fnope", private, "", 404, "404 Project Not Found"},
		{"GitLab", "GET", "/api/v4/user", private, "", 404, "<nil>"},
		{"GitLab", "POST", "/api/v4/projects/acme%2Fapp/merge_requests", private, "{'title':'t'}", 400, "<nil>"},
		{"GitLab", "POST", "/api/v4/projects/acme%2Fapp/merge_requests", private, "{'title':'','source_branch':'x','target_branch':'main'}", 400, "map[title:[can't be blank]]"},
		{"GitLab", "POST", "/api/v4/projects/acme%2Fapp/merge_requests", private, "{'title':'t','source_branch':'main','target_branch':'main'}", 422, "[You can't use same project/branch for source and target]"},
		{"GitLab", "POST", "/api/v4/projects/acme%2Fapp/merge_requests", private, "{'title':'t','source_branch':'x','target_branch':'main'}", 201, "<nil>"},
		{"GitLab", "POST", "/api/v4/projects/acme%2Fapp/merge_requests", private, "{'title':'t','source_branch':'x','target_branch':'main'}", 409, "[Another open merge request already exists for this source branch: !1]"},
		{"Gitea", "GET", "/api/v1/version", none, "", 200, "<nil>"},
		{"Gitea", "GET", "/api/v1/repos/acme/app", none, "", 401, "token is required"},
		{"Gitea", "GET", "/api/v1/repos/acme/app", private, "", 401, "token is required"},
		{"Gitea", "GET", "/api/v1/repos/acme/app", bearer, "", 200, "<nil>"},
		{"Gitea", "GET", "/api/v1/repos/acme/nope", token, "", 404, "The target couldn't be found."},
		{"Gitea", "GET", "/api/v1/user", token, "", 404, "The target couldn't be found."},
		{"Gitea", "POST", "/api/v1/repos/acme/app/pulls", token, "{", 422, "[]: DeserializationError"},
		{"Gitea", "POST", "/api/v1/repos/acme/app/pulls", token, "{'head':'x','base':'main'}", 422, "[Title]: Required"},
		{"Gitea", "POST", "/api/v1/repos/acme/app/pulls", token, "{'title':'t','head':'main','base':'main'}", 422, "Invalid PullRequest: There are no changes between the head and the base"},
		{"Gitea", "POST", "/api/v1/repos/acme/app/pulls", token, "{'title':'t','head':'x','base':'main'}", 201, "<nil>"},
		{"Gitea", "POST", "/api/v1/repos/acme/app/pulls", token, "{'title':'t','head':'x','base':'main'}", 409,
			"pull request already exists for these targets [id: 1001, issue_id: 1, head_repo_id: 1, base_repo_id: 1, head_branch: x, base_branch: main]"},
	} {
		s := servers[tc.forge]
		status, h, body := call(t, tc.method, s.URL+tc.path, tc.header, strings.ReplaceAll(tc.body, "'", `"`))
		if status != tc.status || fmt.Sprint(body["message"]) != tc.message {
			t.Errorf("%s: %s %s (%q) = %d %v; want %d %q", tc.forge, tc.method, tc.path, tc.body, status, body, tc.status, tc.message)
		}
		if ct := h.Get("Content-Type"); ct != "application/json; charset=utf-8" {
			t.Errorf("%s: %s %s: Content-Type %q", tc.forge, tc.method, tc.path, ct)
		}
		if status >= 400 && !errorBody[tc.forge](s, body) {
			t.Errorf("%s: %s %s: error body %v is not the forge's", tc.forge, tc.method, tc.path, body)
		}
	}
	for name, s := range servers {
		if prs := s.PRs(); len(prs) != 1 || prs[0].Head != "x" || !strings.Contains(prs[0].HTMLURL, "/acme/app/") {
			t.Errorf("%s: PRs = %+v; want the one created", name, prs)
		}
	}
}
