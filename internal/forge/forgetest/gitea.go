package forgetest

import (
	"cmp"
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// GiteaVersion is what a Gitea server's GET /api/v1/version answers.
const GiteaVersion = "1.22.6"

// gitea is Gitea's REST API.
type gitea struct{ s *Server }

func (g gitea) routes(mux *http.ServeMux) http.Handler {
	mux.HandleFunc("GET /api/v1/version", func(w http.ResponseWriter, r *http.Request) {
		g.s.mu.Lock()
		g.s.calls[CallVersion]++
		g.s.mu.Unlock()
		writeJSON(w, http.StatusOK, map[string]any{"version": GiteaVersion})
	})
	mux.HandleFunc("GET /api/v1/repos/{owner}/{repo}", g.s.handle(CallGetRepo, g.getRepo))
	mux.HandleFunc("GET /api/v1/repos/{owner}/{repo}/pulls", g.s.handle(CallListPRs, g.listPRs))
	mux.HandleFunc("POST /api/v1/repos/{owner}/{repo}/pulls", g.s.handle(CallCreatePR, g.createPR))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { g.fail(w, Failure{Status: http.StatusNotFound}) })
	return mux
}

func (gitea) token(r *http.Request) string { return authToken(r, "token", "Bearer") }

func (gitea) repoKey(r *http.Request) string { return ownerRepo(r) }

// deny answers as Gitea does, which takes a request with an unknown token
// for an anonymous one.
func (g gitea) deny(w http.ResponseWriter, _ *http.Request) {
	g.writeError(w, http.StatusUnauthorized, "token is required")
}

// fail answers with Gitea's error body; a 404 has its own.
func (g gitea) fail(w http.ResponseWriter, f Failure) {
	if f.RateLimited || f.Status == http.StatusTooManyRequests {
		w.Header().Set("Retry-After", "60")
	}
	switch {
	case f.Message != "":
		g.writeError(w, f.Status, f.Message)
	case f.Status == http.StatusNotFound:
		writeJSON(w, http.StatusNotFound, map[string]any{"errors": []string{}, "message": "The target couldn't be found.",
			"url": g.s.URL + "/api/swagger"})
	default:
		g.writeError(w, f.Status, http.StatusText(f.Status))
	}
}

// writeError is Gitea's error body: the message and the API's
// documentation.
func (g gitea) writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]any{"message": msg, "url": g.s.URL + "/api/swagger"})
}

func (g gitea) webURL(p *PR) string { return fmt.Sprintf("%s/%s/pulls/%d", g.s.URL, p.Repo, p.Number) }

func (g gitea) getRepo(w http.ResponseWriter, r *http.Request, rp *repo) {
	writeJSON(w, http.StatusOK, g.repoJSON(rp))
}

// listPRs filters by state (open, the default, closed or all) and pages
// by page and limit with Gitea's Link and X-Total-Count.
func (g gitea) listPRs(w http.ResponseWriter, r *http.Request, rp *repo) {
	state := cmp.Or(r.URL.Query().Get("state"), "open")
	g.s.list(w, r, rp, listing{state: state, sizeKey: "limit", def: 30, most: 50, headers: func(h http.Header, pg paging) {
		var links []string
		link := func(rel string, to int) {
			links = append(links, fmt.Sprintf(`<%s/api/v1/repos/%s/pulls?limit=%d&page=%d&state=%s>; rel="%s"`,
				g.s.URL, rp.fullName(), pg.size, to, state, rel))
		}
		if pg.page < pg.pages {
			link("next", pg.page+1)
			link("last", pg.pages)
		}
		if pg.page > 1 {
			link("first", 1)
			link("prev", pg.page-1)
		}
		if len(links) > 0 {
			h.Set("Link", strings.Join(links, ","))
		}
		h.Set("X-Total-Count", strconv.Itoa(pg.total))
	}})
}

// createPR validates as Gitea does: 422 for a missing field or a head that
// is the base, 409 for a pull request open from the same head into the
// same base.
func (g gitea) createPR(w http.ResponseWriter, r *http.Request, rp *repo) {
	var in struct{ Head, Base, Title, Body string }
	if !readJSON(w, r, &in) {
		g.writeError(w, http.StatusUnprocessableEntity, "[]: DeserializationError")
		return
	}
	for _, f := range []struct{ name, v string }{{"Head", in.Head}, {"Base", in.Base}, {"Title", in.Title}} {
		if f.v == "" {
			g.writeError(w, http.StatusUnprocessableEntity, "["+f.name+"]: Required")
			return
		}
	}
	if p := g.s.create(w, rp, PR{Title: in.Title, Body: in.Body, Head: in.Head, Base: in.Base}); p != nil {
		writeJSON(w, http.StatusCreated, g.prJSON(p, rp))
	}
}

// refuse is Gitea's 422 for a head that is the base, its 409 for a pull
// request open already.
func (g gitea) refuse(w http.ResponseWriter, rp *repo, _, dup *PR) {
	if dup == nil {
		g.writeError(w, http.StatusUnprocessableEntity, "Invalid PullRequest: There are no changes between the head and the base")
		return
	}
	g.writeError(w, http.StatusConflict, fmt.Sprintf(
		"pull request already exists for these targets [id: %d, issue_id: %d, head_repo_id: %d, base_repo_id: %d, head_branch: %s, base_branch: %s]",
		1000+dup.Number, dup.Number, rp.id, rp.id, dup.Head, dup.Base))
}

func (g gitea) userJSON(login string) map[string]any {
	return map[string]any{"id": 1, "login": login, "login_name": "", "full_name": "", "email": login + "@noreply.localhost",
		"avatar_url": g.s.URL + "/avatars/" + login, "username": login}
}

func (g gitea) repoJSON(rp *repo) map[string]any {
	full, host := rp.fullName(), strings.TrimPrefix(g.s.URL, "http://")
	ts := repoCreated
	return map[string]any{
		"id": rp.id, "owner": g.userJSON(rp.owner), "name": rp.name, "full_name": full, "description": "",
		"empty": rp.defaultBranch == "", "private": false, "fork": false, "template": false, "parent": nil, "mirror": false,
		"size": 0, "language": "", "html_url": g.s.URL + "/" + full, "url": g.s.URL + "/api/v1/repos/" + full,
		"ssh_url": "git@" + host + ":" + full + ".git", "clone_url": g.s.URL + "/" + full + ".git",
		"original_url": "", "website": "", "stars_count": 0, "forks_count": 0, "watchers_count": 1,
		"open_issues_count": 0, "open_pr_counter": 0, "release_counter": 0, "default_branch": rp.defaultBranch,
		"archived": false, "created_at": ts, "updated_at": ts, "archived_at": "1970-01-01T00:00:00Z",
		"permissions": map[string]any{"admin": true, "push": true, "pull": true},
		"has_issues":  true, "has_wiki": true, "has_pull_requests": true, "has_projects": true, "has_releases": true,
		"has_packages": true, "has_actions": false, "ignore_whitespace_conflicts": false,
		"allow_merge_commits": true, "allow_rebase": true, "allow_rebase_explicit": true, "allow_squash_merge": true,
		"default_merge_style": "merge", "avatar_url": "", "internal": false, "mirror_interval": "", "object_format_name": "sha1",
	}
}

func (g gitea) branchJSON(label, ref string, rp *repo) map[string]any {
	return map[string]any{"label": label, "ref": ref, "sha": strings.Repeat("0", 40), "repo_id": rp.id, "repo": g.repoJSON(rp)}
}

func (g gitea) prJSON(p *PR, rp *repo) map[string]any {
	ts := p.stamp()
	head := g.branchJSON(p.Head, p.Head, rp)
	if !strings.EqualFold(p.HeadOwner, rp.owner) { // a fork's, under its owner
		fork := g.repoJSON(rp)
		fork["id"], fork["owner"], fork["full_name"], fork["fork"] = 1000+rp.id, g.userJSON(p.HeadOwner), p.HeadOwner+"/"+rp.name, true
		head["label"], head["repo_id"], head["repo"] = p.HeadOwner+":"+p.Head, 1000+rp.id, fork
	}
	return map[string]any{
		"id": 1000 + p.Number, "url": p.HTMLURL, "number": p.Number, "user": g.userJSON(p.HeadOwner),
		"title": p.Title, "body": p.Body, "labels": []any{}, "milestone": nil, "assignee": nil, "assignees": nil,
		"requested_reviewers": nil, "state": p.State, "draft": p.Draft, "is_locked": false, "comments": 0,
		"html_url": p.HTMLURL, "diff_url": p.HTMLURL + ".diff", "patch_url": p.HTMLURL + ".patch",
		"mergeable": true, "merged": false, "merged_at": nil, "merge_commit_sha": nil, "merged_by": nil,
		"allow_maintainer_edit": false, "base": g.branchJSON(p.Base, p.Base, rp), "head": head,
		"merge_base": strings.Repeat("0", 40), "due_date": nil, "created_at": ts, "updated_at": ts, "closed_at": nil,
		"pin_order": 0,
	}
}
