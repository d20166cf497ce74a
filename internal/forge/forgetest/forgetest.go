// Package forgetest stands in for the forges' REST APIs in tests: an HTTP
// server on 127.0.0.1 speaking the wire format of GitHub (Start), GitLab
// (StartGitLab) or Gitea and Forgejo (StartGitea) for exactly the calls
// Corral makes (get a repository, create and list pull requests), so the
// real client libraries, and internal/forge over them, run unchanged.
//
// Every request must bear the server's token the way its forge takes it,
// else it gets that forge's 401. Tests script failures (Fail: the next call
// of a kind answers 422, 500, a rate limit, or drops the connection) and
// assert on what was created (PRs) and called (Calls). The servers differ
// only in their wire format (a dialect); what they hold and how it is
// scripted is shared.
package forgetest

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
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

// The calls the servers answer, in GitHub's paths; the GitLab and Gitea
// servers count their own paths for the same calls under the same names.
const (
	CallGetRepo  Call = "get-repo"  // GET /repos/{owner}/{repo}
	CallListPRs  Call = "list-prs"  // GET /repos/{owner}/{repo}/pulls
	CallCreatePR Call = "create-pr" // POST /repos/{owner}/{repo}/pulls
	CallVersion  Call = "version"   // Gitea's GET /api/v1/version, which needs no token
)

// Options configure a server.
type Options struct {
	// Token is what every request must bear; DefaultToken when "".
	Token string
	// Repos exist from the start ("owner/name", or on GitLab
	// "group/subgroup/name"; default branch main).
	Repos []string
}

// Failure is a scripted answer to one call.
type Failure struct {
	Status  int    // HTTP status, e.g. 422, 500
	Message string // the forge's message; its usual one for Status when ""
	// Errors are GitHub's validation details ({"resource","code","field","message"}).
	Errors []ErrorDetail
	// RateLimited sends the headers of an exhausted rate limit (with 403:
	// GitHub's primary rate limit).
	RateLimited bool
	// Drop closes the connection without answering (a network failure).
	Drop bool
	// Commit carries the call out before failing: the effect happens, the
	// answer is lost (a crash or a timeout after the forge acted).
	Commit bool
}

// PR is a pull request (on GitLab, a merge request) the server holds.
type PR struct {
	Repo      string // "owner/name" ("group/subgroup/name")
	Number    int    // GitLab's iid
	Title     string
	Body      string // GitLab's description
	Head      string // the branch
	HeadOwner string // the owner of the head branch's repository
	Base      string
	Draft     bool
	State     string // "open" or "closed", whatever the forge calls them
	HTMLURL   string
	CreatedAt time.Time
}

// repoCreated is when every repository was created.
const repoCreated = "2024-01-02T03:04:05Z"

// stamp is when p was created, as the APIs write times.
func (p *PR) stamp() string { return p.CreatedAt.Format(time.RFC3339) }

type repo struct {
	owner, name, defaultBranch string
	id                         int
}

func (rp *repo) fullName() string { return rp.owner + "/" + rp.name }

// dialect is a forge's wire format: its routes, how requests carry the
// token and name the repository, and how its answers read. Its methods run
// with Server.mu held, except routes.
type dialect interface {
	// routes adds the forge's calls, wrapped by Server.handle, to mux, and
	// returns the server's handler.
	routes(mux *http.ServeMux) http.Handler
	// token is the token r bears, "" for none.
	token(r *http.Request) string
	// repoKey is the lowercase full name of the repository r addresses.
	repoKey(r *http.Request) string
	// deny answers r, which lacks the right token.
	deny(w http.ResponseWriter, r *http.Request)
	// fail answers with a failure: a scripted one, or a 404 for a
	// repository the server lacks.
	fail(w http.ResponseWriter, f Failure)
	// refuse answers a request for want, a pull request on rp whose head
	// is its base (dup nil) or that is open already (dup).
	refuse(w http.ResponseWriter, rp *repo, want, dup *PR)
	// webURL is the page of p.
	webURL(p *PR) string
	// prJSON is p as the forge's API shows it.
	prJSON(p *PR, rp *repo) map[string]any
}

// Server is a running fake forge API. It is safe for concurrent use.
type Server struct {
	// URL is the server's base URL, http://127.0.0.1:port.
	URL string
	srv *httptest.Server
	d   dialect

	resets string // when the rate limit renews, in Unix seconds: an hour after the start

	mu       sync.Mutex // guards everything below
	token    string
	repos    map[string]*repo // by lowercase full name
	prs      []*PR
	nextNum  map[string]int // per repository
	failures map[Call][]Failure
	calls    map[Call]int
}

// start starts a server speaking the dialect d makes, and stops it when
// the test ends.
func start(t testing.TB, opts Options, d func(*Server) dialect) *Server {
	t.Helper()
	s := &Server{token: opts.Token, repos: map[string]*repo{}, nextNum: map[string]int{},
		failures: map[Call][]Failure{}, calls: map[Call]int{}, resets: strconv.FormatInt(time.Now().Add(time.Hour).Unix(), 10)}
	s.d = d(s)
	if s.token == "" {
		s.token = DefaultToken
	}
	for _, r := range opts.Repos {
		s.AddRepo(r, "main")
	}
	s.srv = httptest.NewServer(s.d.routes(http.NewServeMux())) // 127.0.0.1:0
	s.URL = s.srv.URL
	t.Cleanup(s.srv.Close)
	return s
}

// The servers, one per forge's wire format.

// Start starts a fake GitHub API and stops it when the test ends.
//
// It serves the API both at its root (/repos/...) as api.github.com does,
// and under /api/v3/ as a GitHub Enterprise Server does (what go-github's
// WithEnterpriseURLs adds): give Server.URL as the API URL either way.
// Requests bear the token as "Authorization: Bearer" or "token".
func Start(t testing.TB, opts Options) *Server {
	t.Helper()
	return start(t, opts, func(s *Server) dialect { return github{s} })
}

// StartGitLab starts a fake GitLab REST API (v4) and stops it when the test
// ends; give Server.URL as the instance's URL. Projects are addressed by
// their URL-encoded full path (acme%2Fapp) or their id; requests bear the
// token as PRIVATE-TOKEN or "Authorization: Bearer". A merge request's
// Number is its iid; its state reads "opened" and "closed".
func StartGitLab(t testing.TB, opts Options) *Server {
	t.Helper()
	return start(t, opts, func(s *Server) dialect { return gitlab{s} })
}

// StartGitea starts a fake Gitea API (/api/v1, which Forgejo shares) and
// stops it when the test ends; give Server.URL as the server's URL. Requests
// bear the token as "Authorization: token" or "Bearer"; /api/v1/version
// needs none, as on Gitea.
func StartGitea(t testing.TB, opts Options) *Server {
	t.Helper()
	return start(t, opts, func(s *Server) dialect { return gitea{s} })
}

// AddRepo makes repository fullName ("owner/name", "group/sub/name")
// exist.
func (s *Server) AddRepo(fullName, defaultBranch string) {
	i := strings.LastIndex(fullName, "/")
	s.mu.Lock()
	defer s.mu.Unlock()
	s.repos[strings.ToLower(fullName)] = &repo{owner: fullName[:max(i, 0)], name: fullName[i+1:],
		defaultBranch: defaultBranch, id: len(s.repos) + 1}
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
		if s.d.token(r) != s.token {
			s.d.deny(w, r)
			return
		}
		rp := s.repos[s.d.repoKey(r)]
		if q := s.failures[c]; len(q) > 0 {
			f := q[0]
			s.failures[c] = q[1:]
			if f.Commit && rp != nil {
				h(httptest.NewRecorder(), r, rp)
			}
			if f.Drop && drop(w) {
				return
			}
			s.d.fail(w, f)
			return
		}
		if rp == nil {
			s.d.fail(w, Failure{Status: http.StatusNotFound})
			return
		}
		h(w, r, rp)
	}
}

// drop closes the connection without an answer.
func drop(w http.ResponseWriter) bool {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return false
	}
	conn.Close()
	return true
}

// create opens a pull request on rp from want's Title, Body, Draft, Base
// and Head ("owner:branch" for a fork's) and returns it for the caller to
// answer with; or it refuses it, answering, and returns nil: when its head
// is its base in the same repository, or when one is open already from the
// same head into the same base. s.mu is held.
func (s *Server) create(w http.ResponseWriter, rp *repo, want PR) *PR {
	want.HeadOwner = rp.owner
	if o, b, ok := strings.Cut(want.Head, ":"); ok {
		want.HeadOwner, want.Head = o, b
	}
	full := rp.fullName()
	if want.Head == want.Base && strings.EqualFold(want.HeadOwner, rp.owner) {
		s.d.refuse(w, rp, &want, nil)
		return nil
	}
	for _, p := range s.prs {
		if p.Repo == full && p.State == "open" && p.Head == want.Head && strings.EqualFold(p.HeadOwner, want.HeadOwner) && p.Base == want.Base {
			s.d.refuse(w, rp, &want, p)
			return nil
		}
	}
	s.nextNum[full]++
	p := &want
	p.Repo, p.Number, p.State, p.CreatedAt = full, s.nextNum[full], "open", time.Now().UTC().Truncate(time.Second)
	p.HTMLURL = s.d.webURL(p)
	s.prs = append(s.prs, p)
	return p
}

// listing is how a forge lists pull requests.
type listing struct {
	state     string         // "open", "closed" or "all"
	keep      func(*PR) bool // nil keeps all
	sizeKey   string         // the page size parameter: per_page or limit
	def, most int            // the default and the largest page size
	// headers adds the forge's paging headers, if it has any.
	headers func(h http.Header, p paging)
}

// paging is where a page is in a listing.
type paging struct {
	page, size, pages, total int
}

// list answers with the pull requests of rp that l selects, newest first,
// in the page the query asks for. s.mu is held.
func (s *Server) list(w http.ResponseWriter, r *http.Request, rp *repo, l listing) {
	var prs []*PR
	for i := len(s.prs) - 1; i >= 0; i-- {
		p := s.prs[i]
		if p.Repo == rp.fullName() && (l.state == "all" || p.State == l.state) && (l.keep == nil || l.keep(p)) {
			prs = append(prs, p)
		}
	}
	q := r.URL.Query()
	pg := paging{total: len(prs)}
	if pg.size, _ = strconv.Atoi(q.Get(l.sizeKey)); pg.size <= 0 || pg.size > l.most {
		pg.size = min(l.def, l.most)
	}
	pg.page, _ = strconv.Atoi(q.Get("page"))
	pg.page = max(pg.page, 1)
	pg.pages = max((len(prs)+pg.size-1)/pg.size, 1)
	if l.headers != nil {
		l.headers(w.Header(), pg)
	}
	lo := min((pg.page-1)*pg.size, len(prs))
	out := []map[string]any{}
	for _, p := range prs[lo:min(lo+pg.size, len(prs))] {
		out = append(out, s.d.prJSON(p, rp))
	}
	writeJSON(w, http.StatusOK, out)
}

// authToken is the token r's Authorization header gives under one of
// schemes ("Bearer", "token"), "" for none.
func authToken(r *http.Request, schemes ...string) string {
	scheme, tok, _ := strings.Cut(r.Header.Get("Authorization"), " ")
	for _, sc := range schemes {
		if strings.EqualFold(scheme, sc) {
			return tok
		}
	}
	return ""
}

// ownerRepo is the lowercase "owner/repo" of a path
// /repos/{owner}/{repo}/..., GitHub's and Gitea's.
func ownerRepo(r *http.Request) string {
	return strings.ToLower(r.PathValue("owner") + "/" + r.PathValue("repo"))
}

// readJSON reads a JSON request body into v.
func readJSON(w http.ResponseWriter, r *http.Request, v any) bool {
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
	return err == nil && json.Unmarshal(data, v) == nil
}

// writeJSON writes v as a JSON answer with the headers already set.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
