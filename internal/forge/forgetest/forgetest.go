// Package forgetest is a stand-in for the GitHub REST API in tests: an HTTP
// server on 127.0.0.1 speaking GitHub's wire format for exactly the calls
// Corral makes (get a repository, create and list pull requests), so the
// real go-github client, and internal/forge over it, run unchanged.
//
// It serves the API both at its root (/repos/...) as api.github.com does,
// and under /api/v3/ as a GitHub Enterprise Server does (what go-github's
// WithEnterpriseURLs adds): give Server.URL as the API URL either way.
// Every request must bear the server's token (Authorization: Bearer or
// token), else it gets GitHub's 401. Tests script failures (Fail: the next
// call of a kind answers 422, 500, a rate limit, or drops the connection)
// and assert on what was created (PRs) and called (Calls).
package forgetest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// DefaultToken is the token a Server accepts unless Options say otherwise.
const DefaultToken = "ghp_forgetestTOKEN0123456789abcdefghijklmn"

// Call is a kind of API call.
type Call string

// The calls the server answers.
const (
	CallGetRepo  Call = "get-repo"  // GET /repos/{owner}/{repo}
	CallListPRs  Call = "list-prs"  // GET /repos/{owner}/{repo}/pulls
	CallCreatePR Call = "create-pr" // POST /repos/{owner}/{repo}/pulls
)

// Options configure Start.
type Options struct {
	// Token is what every request must bear; DefaultToken when "".
	Token string
	// Repos exist from the start ("owner/name", default branch main).
	Repos []string
}

// Failure is a scripted answer to one call.
type Failure struct {
	Status  int    // HTTP status, e.g. 422, 500
	Message string // GitHub's "message"; the status text when ""
	// Errors are GitHub's validation details ({"resource","code","field","message"}).
	Errors []ErrorDetail
	// RateLimited sends X-RateLimit-Remaining: 0 (with 403: GitHub's
	// primary rate limit).
	RateLimited bool
	// Drop closes the connection without answering (a network failure).
	Drop bool
	// Commit carries the call out before failing: the effect happens, the
	// answer is lost (a crash or a timeout after GitHub acted).
	Commit bool
}

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

// PR is a pull request the server holds.
type PR struct {
	Repo      string // "owner/name"
	Number    int
	Title     string
	Body      string
	Head      string // the branch
	HeadOwner string // the owner of the head branch's repository
	Base      string
	Draft     bool
	State     string // "open" or "closed"
	HTMLURL   string
	CreatedAt time.Time
}

type repo struct {
	owner, name, defaultBranch string
	id                         int
}

// Server is a running fake GitHub API. It is safe for concurrent use.
type Server struct {
	// URL is the server's base URL, http://127.0.0.1:port.
	URL string
	srv *httptest.Server

	mu       sync.Mutex // guards everything below
	token    string
	repos    map[string]*repo // by lowercase "owner/name"
	prs      []*PR
	nextNum  map[string]int // per repository
	failures map[Call][]Failure
	calls    map[Call]int
}

// Start starts a server and stops it when the test ends.
func Start(t testing.TB, opts Options) *Server {
	t.Helper()
	s := &Server{token: opts.Token, repos: map[string]*repo{}, nextNum: map[string]int{},
		failures: map[Call][]Failure{}, calls: map[Call]int{}}
	if s.token == "" {
		s.token = DefaultToken
	}
	for _, r := range opts.Repos {
		s.AddRepo(r, "main")
	}
	mux := http.NewServeMux()
	for _, prefix := range []string{"", "/api/v3"} {
		mux.HandleFunc("GET "+prefix+"/repos/{owner}/{repo}", s.handle(CallGetRepo, s.getRepo))
		mux.HandleFunc("GET "+prefix+"/repos/{owner}/{repo}/pulls", s.handle(CallListPRs, s.listPRs))
		mux.HandleFunc("POST "+prefix+"/repos/{owner}/{repo}/pulls", s.handle(CallCreatePR, s.createPR))
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "Not Found", nil)
	})
	s.srv = httptest.NewServer(mux) // 127.0.0.1:0
	s.URL = s.srv.URL
	t.Cleanup(s.srv.Close)
	return s
}

// AddRepo makes repository fullName ("owner/name") exist.
func (s *Server) AddRepo(fullName, defaultBranch string) {
	owner, name, _ := strings.Cut(fullName, "/")
	s.mu.Lock()
	defer s.mu.Unlock()
	s.repos[strings.ToLower(fullName)] = &repo{owner: owner, name: name, defaultBranch: defaultBranch, id: len(s.repos) + 1}
}

// SetToken changes the token requests must bear.
func (s *Server) SetToken(token string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.token = token
}

// Fail makes the next call of kind c answer f (after authentication);
// several Fails for one kind are used in order.
func (s *Server) Fail(c Call, f Failure) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failures[c] = append(s.failures[c], f)
}

// PRs returns copies of the pull requests created so far, oldest first.
func (s *Server) PRs() []PR {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]PR, 0, len(s.prs))
	for _, p := range s.prs {
		out = append(out, *p)
	}
	return out
}

// ClosePR closes pull request number of repository fullName.
func (s *Server) ClosePR(fullName string, number int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range s.prs {
		if strings.EqualFold(p.Repo, fullName) && p.Number == number {
			p.State = "closed"
		}
	}
}

// Calls is how many calls of kind c the server received, failed ones and
// unauthenticated ones included.
func (s *Server) Calls(c Call) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[c]
}

// handle counts the call, checks the token, plays a scripted failure if
// one is queued, finds the repository, then runs h with s.mu held.
func (s *Server) handle(c Call, h func(w http.ResponseWriter, r *http.Request, rp *repo)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.calls[c]++
		auth := r.Header.Get("Authorization")
		scheme, tok, _ := strings.Cut(auth, " ")
		switch {
		case auth == "":
			writeError(w, http.StatusUnauthorized, "Requires authentication", nil)
			return
		case !strings.EqualFold(scheme, "bearer") && !strings.EqualFold(scheme, "token"), tok != s.token:
			writeError(w, http.StatusUnauthorized, "Bad credentials", nil)
			return
		}
		if q := s.failures[c]; len(q) > 0 {
			f := q[0]
			s.failures[c] = q[1:]
			if rp := s.repo(r); f.Commit && rp != nil {
				h(httptest.NewRecorder(), r, rp)
			}
			s.fail(w, f)
			return
		}
		rp := s.repo(r)
		if rp == nil {
			writeError(w, http.StatusNotFound, "Not Found", nil)
			return
		}
		h(w, r, rp)
	}
}

// repo is the request's repository, nil if unknown. s.mu is held.
func (s *Server) repo(r *http.Request) *repo {
	return s.repos[strings.ToLower(r.PathValue("owner")+"/"+r.PathValue("repo"))]
}

func (s *Server) fail(w http.ResponseWriter, f Failure) {
	if f.Drop {
		if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
			conn.Close()
			return
		}
	}
	if f.RateLimited {
		w.Header().Set("X-RateLimit-Remaining", "0")
	}
	msg := f.Message
	if msg == "" {
		msg = http.StatusText(f.Status)
	}
	writeError(w, f.Status, msg, f.Errors)
}

func (s *Server) getRepo(w http.ResponseWriter, r *http.Request, rp *repo) {
	writeJSON(w, http.StatusOK, s.repoJSON(rp))
}

func (s *Server) listPRs(w http.ResponseWriter, r *http.Request, rp *repo) {
	q := r.URL.Query()
	state := q.Get("state")
	if state == "" {
		state = "open"
	}
	perPage, _ := strconv.Atoi(q.Get("per_page"))
	if perPage <= 0 || perPage > 100 {
		perPage = 30
	}
	page, _ := strconv.Atoi(q.Get("page"))
	if page <= 0 {
		page = 1
	}
	// GitHub lists newest first; head filters by "owner:branch" (a head
	// without the owner part filters nothing here).
	out := []map[string]any{}
	for _, p := range slices.Backward(s.prs) {
		if p.Repo != rp.owner+"/"+rp.name || (state != "all" && p.State != state) {
			continue
		}
		if h := q.Get("head"); h != "" {
			owner, branch, ok := strings.Cut(h, ":")
			if ok && (!strings.EqualFold(owner, p.HeadOwner) || branch != p.Head) {
				continue
			}
		}
		if b := q.Get("base"); b != "" && b != p.Base {
			continue
		}
		out = append(out, s.prJSON(p, rp))
	}
	lo := min((page-1)*perPage, len(out))
	writeJSON(w, http.StatusOK, out[lo:min(lo+perPage, len(out))])
}

type newPR struct {
	Title               *string `json:"title"`
	Head                *string `json:"head"`
	Base                *string `json:"base"`
	Body                *string `json:"body"`
	Draft               *bool   `json:"draft"`
	MaintainerCanModify *bool   `json:"maintainer_can_modify"`
	HeadRepo            *string `json:"head_repo"`
	Issue               *int    `json:"issue"`
}

func (s *Server) createPR(w http.ResponseWriter, r *http.Request, rp *repo) {
	var in newPR
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
	if err != nil || json.Unmarshal(data, &in) != nil {
		writeError(w, http.StatusBadRequest, "Problems parsing JSON", nil)
		return
	}
	for _, f := range []struct {
		name string
		v    *string
	}{{"title", in.Title}, {"head", in.Head}, {"base", in.Base}} {
		if f.v == nil || *f.v == "" {
			writeError(w, http.StatusUnprocessableEntity, "Validation Failed",
				[]ErrorDetail{{Resource: "PullRequest", Code: "missing_field", Field: f.name}})
			return
		}
	}
	headOwner, head := rp.owner, *in.Head
	if o, b, ok := strings.Cut(head, ":"); ok {
		headOwner, head = o, b
	}
	if head == *in.Base && strings.EqualFold(headOwner, rp.owner) {
		writeError(w, http.StatusUnprocessableEntity, "Validation Failed", []ErrorDetail{
			{Resource: "PullRequest", Code: "custom", Message: fmt.Sprintf("No commits between %s and %s", *in.Base, head)}})
		return
	}
	full := rp.owner + "/" + rp.name
	for _, p := range s.prs {
		if p.Repo == full && p.State == "open" && p.Head == head && strings.EqualFold(p.HeadOwner, headOwner) && p.Base == *in.Base {
			writeError(w, http.StatusUnprocessableEntity, "Validation Failed", []ErrorDetail{
				{Resource: "PullRequest", Code: "custom", Message: fmt.Sprintf("A pull request already exists for %s:%s.", headOwner, head)}})
			return
		}
	}
	s.nextNum[full]++
	p := &PR{Repo: full, Number: s.nextNum[full], Title: *in.Title, Head: head, HeadOwner: headOwner, Base: *in.Base,
		State: "open", CreatedAt: time.Now().UTC().Truncate(time.Second)}
	if in.Body != nil {
		p.Body = *in.Body
	}
	if in.Draft != nil {
		p.Draft = *in.Draft
	}
	p.HTMLURL = fmt.Sprintf("%s/%s/pull/%d", s.URL, full, p.Number)
	s.prs = append(s.prs, p)
	w.Header().Set("Location", s.apiURL(r, fmt.Sprintf("/repos/%s/pulls/%d", full, p.Number)))
	writeJSON(w, http.StatusCreated, s.prJSON(p, rp))
}

// apiURL is the API URL of path, under the prefix the request used.
func (s *Server) apiURL(r *http.Request, path string) string {
	if strings.HasPrefix(r.URL.Path, "/api/v3/") {
		return s.URL + "/api/v3" + path
	}
	return s.URL + path
}

func (s *Server) repoJSON(rp *repo) map[string]any {
	full := rp.owner + "/" + rp.name
	return map[string]any{
		"id": rp.id, "node_id": fmt.Sprintf("R_%d", rp.id), "name": rp.name, "full_name": full,
		"private": false, "visibility": "public", "fork": false,
		"owner":          map[string]any{"login": rp.owner, "id": 1, "type": "User"},
		"html_url":       s.URL + "/" + full,
		"clone_url":      s.URL + "/" + full + ".git",
		"url":            s.URL + "/repos/" + full,
		"default_branch": rp.defaultBranch,
	}
}

func (s *Server) prJSON(p *PR, rp *repo) map[string]any {
	ts := p.CreatedAt.Format(time.RFC3339)
	return map[string]any{
		"id": 1000 + p.Number, "node_id": fmt.Sprintf("PR_%d", p.Number), "number": p.Number,
		"state": p.State, "locked": false, "title": p.Title, "body": p.Body, "draft": p.Draft, "merged": false,
		"html_url": p.HTMLURL, "diff_url": p.HTMLURL + ".diff",
		"url":        fmt.Sprintf("%s/repos/%s/pulls/%d", s.URL, p.Repo, p.Number),
		"user":       map[string]any{"login": p.HeadOwner, "id": 1, "type": "User"},
		"head":       map[string]any{"label": p.HeadOwner + ":" + p.Head, "ref": p.Head, "sha": strings.Repeat("0", 40), "repo": s.repoJSON(rp)},
		"base":       map[string]any{"label": rp.owner + ":" + p.Base, "ref": p.Base, "sha": strings.Repeat("0", 40), "repo": s.repoJSON(rp)},
		"created_at": ts, "updated_at": ts,
	}
}

// writeJSON answers as GitHub does, rate-limit headers included.
func writeJSON(w http.ResponseWriter, status int, v any) {
	h := w.Header()
	h.Set("Content-Type", "application/json; charset=utf-8")
	h.Set("X-GitHub-Media-Type", "github.v3; format=json")
	h.Set("X-GitHub-Request-Id", "0000:0000:0000000:0000000:00000000")
	h.Set("X-RateLimit-Limit", "5000")
	if h.Get("X-RateLimit-Remaining") == "" {
		h.Set("X-RateLimit-Remaining", "4999")
	}
	h.Set("X-RateLimit-Used", "1")
	h.Set("X-RateLimit-Resource", "core")
	h.Set("X-RateLimit-Reset", strconv.FormatInt(time.Now().Add(time.Hour).Unix(), 10))
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// writeError is GitHub's error body: message, errors, documentation_url
// and the status as a string.
func writeError(w http.ResponseWriter, status int, msg string, errs []ErrorDetail) {
	body := map[string]any{"message": msg, "documentation_url": "https://docs.github.com/rest", "status": strconv.Itoa(status)}
	if len(errs) > 0 {
		body["errors"] = errs
	}
	writeJSON(w, status, body)
}
