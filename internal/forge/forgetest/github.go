package forgetest

import (
	"cmp"
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// ErrorDetail is one entry of a GitHub error's "errors".
type ErrorDetail struct {
	Resource string `json:"resource,omitempty"`
	Code     string `json:"code,omitempty"`
	Field    string `json:"field,omitempty"`
	Message  string `json:"message,omitempty"`
}

// NoCommits is GitHub's answer to a pull request whose head has nothing
// the base lacks.
func NoCommits(base, head string) Failure {
	return Failure{Status: http.StatusUnprocessableEntity, Message: "Validation Failed", Errors: []ErrorDetail{
		{Resource: "PullRequest", Code: "custom", Message: fmt.Sprintf("No commits between %s and %s", base, head)}}}
}

// github is GitHub's REST API.
type github struct{ s *Server }

func (g github) routes(mux *http.ServeMux) http.Handler {
	for _, prefix := range []string{"", "/api/v3"} {
		mux.HandleFunc("GET "+prefix+"/repos/{owner}/{repo}", g.s.handle(CallGetRepo, g.getRepo))
		mux.HandleFunc("GET "+prefix+"/repos/{owner}/{repo}/pulls", g.s.handle(CallListPRs, g.listPRs))
		mux.HandleFunc("POST "+prefix+"/repos/{owner}/{repo}/pulls", g.s.handle(CallCreatePR, g.createPR))
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		g.fail(w, Failure{Status: http.StatusNotFound})
	})
	return githubHeaders(mux, g.s.resets)
}

// githubHeaders adds the headers GitHub sends with every answer, its rate
// limit's included (which a failure may change).
func githubHeaders(next http.Handler, resets string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for name, value := range map[string]string{
			"X-GitHub-Media-Type": "github.v3; format=json", "X-GitHub-Request-Id": "0000:0000:0000000:0000000:00000000",
			"X-RateLimit-Limit": "5000", "X-RateLimit-Remaining": "4999", "X-RateLimit-Used": "1",
			"X-RateLimit-Resource": "core", "X-RateLimit-Reset": resets,
		} {
			w.Header().Set(name, value)
		}
		next.ServeHTTP(w, r)
	})
}

func (github) token(r *http.Request) string { return authToken(r, "Bearer", "token") }

func (github) repoKey(r *http.Request) string { return ownerRepo(r) }

func (github) deny(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") == "" {
		writeGitHubError(w, http.StatusUnauthorized, "Requires authentication", nil)
		return
	}
	writeGitHubError(w, http.StatusUnauthorized, "Bad credentials", nil)
}

func (github) fail(w http.ResponseWriter, f Failure) {
	if f.RateLimited {
		w.Header().Set("X-RateLimit-Remaining", "0")
	}
	msg := f.Message
	if msg == "" {
		msg = http.StatusText(f.Status)
	}
	writeGitHubError(w, f.Status, msg, f.Errors)
}

func (g github) webURL(p *PR) string { return fmt.Sprintf("%s/%s/pull/%d", g.s.URL, p.Repo, p.Number) }

func (g github) getRepo(w http.ResponseWriter, r *http.Request, rp *repo) {
	writeJSON(w, http.StatusOK, g.repoJSON(rp))
}

// listPRs filters by state (open, the default, closed or all), head
// ("owner:branch"; a head without the owner part filters nothing here) and
// base.
func (g github) listPRs(w http.ResponseWriter, r *http.Request, rp *repo) {
	q := r.URL.Query()
	g.s.list(w, r, rp, listing{state: cmp.Or(q.Get("state"), "open"), sizeKey: "per_page", def: 30, most: 100,
		keep: func(p *PR) bool {
			if owner, branch, ok := strings.Cut(q.Get("head"), ":"); ok && (!strings.EqualFold(owner, p.HeadOwner) || branch != p.Head) {
				return false
			}
			return q.Get("base") == "" || q.Get("base") == p.Base
		}})
}

func (g github) createPR(w http.ResponseWriter, r *http.Request, rp *repo) {
	var in struct {
		Title, Head, Base, Body *string
		Draft                   *bool
	}
	if !readJSON(w, r, &in) {
		writeGitHubError(w, http.StatusBadRequest, "Problems parsing JSON", nil)
		return
	}
	for _, f := range []struct {
		name string
		v    *string
	}{{"title", in.Title}, {"head", in.Head}, {"base", in.Base}} {
		if f.v == nil || *f.v == "" {
			writeGitHubError(w, http.StatusUnprocessableEntity, "Validation Failed",
				[]ErrorDetail{{Resource: "PullRequest", Code: "missing_field", Field: f.name}})
			return
		}
	}
	want := PR{Title: *in.Title, Head: *in.Head, Base: *in.Base}
	if in.Body != nil {
		want.Body = *in.Body
	}
	if in.Draft != nil {
		want.Draft = *in.Draft
	}
	if p := g.s.create(w, rp, want); p != nil {
		w.Header().Set("Location", g.apiURL(r, fmt.Sprintf("/repos/%s/pulls/%d", p.Repo, p.Number)))
		writeJSON(w, http.StatusCreated, g.prJSON(p, rp))
	}
}

// refuse is GitHub's 422 with the reason in its errors.
func (github) refuse(w http.ResponseWriter, _ *repo, want, dup *PR) {
	msg := fmt.Sprintf("No commits between %s and %s", want.Base, want.Head)
	if dup != nil {
		msg = fmt.Sprintf("A pull request already exists for %s:%s.", dup.HeadOwner, dup.Head)
	}
	writeGitHubError(w, http.StatusUnprocessableEntity, "Validation Failed", []ErrorDetail{
		{Resource: "PullRequest", Code: "custom", Message: msg}})
}

// apiURL is the API URL of path, under the prefix the request used.
func (g github) apiURL(r *http.Request, path string) string {
	if strings.HasPrefix(r.URL.Path, "/api/v3/") {
		return g.s.URL + "/api/v3" + path
	}
	return g.s.URL + path
}

func (g github) repoJSON(rp *repo) map[string]any {
	full := rp.fullName()
	return map[string]any{
		"id": rp.id, "node_id": fmt.Sprintf("R_%d", rp.id), "name": rp.name, "full_name": full,
		"private": false, "visibility": "public", "fork": false,
		"owner":          map[string]any{"login": rp.owner, "id": 1, "type": "User"},
		"html_url":       g.s.URL + "/" + full,
		"clone_url":      g.s.URL + "/" + full + ".git",
		"url":            g.s.URL + "/repos/" + full,
		"default_branch": rp.defaultBranch,
	}
}

func (g github) prJSON(p *PR, rp *repo) map[string]any {
	ts := p.stamp()
	return map[string]any{
		"id": 1000 + p.Number, "node_id": fmt.Sprintf("PR_%d", p.Number), "number": p.Number,
		"state": p.State, "locked": false, "title": p.Title, "body": p.Body, "draft": p.Draft, "merged": false,
		"html_url": p.HTMLURL, "diff_url": p.HTMLURL + ".diff",
		"url":        fmt.Sprintf("%s/repos/%s/pulls/%d", g.s.URL, p.Repo, p.Number),
		"user":       map[string]any{"login": p.HeadOwner, "id": 1, "type": "User"},
		"head":       map[string]any{"label": p.HeadOwner + ":" + p.Head, "ref": p.Head, "sha": strings.Repeat("0", 40), "repo": g.repoJSON(rp)},
		"base":       map[string]any{"label": rp.owner + ":" + p.Base, "ref": p.Base, "sha": strings.Repeat("0", 40), "repo": g.repoJSON(rp)},
		"created_at": ts, "updated_at": ts,
	}
}

// writeGitHubError is GitHub's error body: message, errors,
// documentation_url and the status as a string.
func writeGitHubError(w http.ResponseWriter, status int, msg string, errs []ErrorDetail) {
	body := map[string]any{"message": msg, "documentation_url": "https://docs.github.com/rest", "status": strconv.Itoa(status)}
	if len(errs) > 0 {
		body["errors"] = errs
	}
	writeJSON(w, status, body)
}
