package forgetest

import (
	"cmp"
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// gitlab is GitLab's REST API.
type gitlab struct{ s *Server }

func (g gitlab) routes(mux *http.ServeMux) http.Handler {
	mux.HandleFunc("GET /api/v4/projects/{id}", g.s.handle(CallGetRepo, g.getProject))
	mux.HandleFunc("GET /api/v4/projects/{id}/merge_requests", g.s.handle(CallListPRs, g.listMRs))
	mux.HandleFunc("POST /api/v4/projects/{id}/merge_requests", g.s.handle(CallCreatePR, g.createMR))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusNotFound, map[string]any{"error": "404 Not Found"})
	})
	return mux
}

func (gitlab) token(r *http.Request) string {
	if tok := r.Header.Get("PRIVATE-TOKEN"); tok != "" {
		return tok
	}
	return authToken(r, "Bearer")
}

// repoKey reads the project's full path, or its numeric id.
func (g gitlab) repoKey(r *http.Request) string {
	id := strings.ToLower(r.PathValue("id"))
	if n, err := strconv.Atoi(id); err == nil {
		for key, rp := range g.s.repos {
			if rp.id == n {
				return key
			}
		}
	}
	return id
}

func (gitlab) deny(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusUnauthorized, map[string]any{"message": "401 Unauthorized"})
}

// fail answers as GitLab does: Rack::Attack's plain "Retry later" for a
// rate limit, Grape's {"error"} for a 400, a list of model errors for 409
// and 422, else {"message": "403 Forbidden"} ("404 Project Not Found":
// only projects are looked up).
func (g gitlab) fail(w http.ResponseWriter, f Failure) {
	msg := f.Message
	if f.RateLimited || f.Status == http.StatusTooManyRequests {
		h := w.Header()
		h.Set("RateLimit-Limit", "2000")
		h.Set("RateLimit-Observed", "2001")
		h.Set("RateLimit-Remaining", "0")
		h.Set("RateLimit-Reset", g.s.resets)
		h.Set("Retry-After", "60")
		if msg == "" {
			msg = "Retry later"
		}
		h.Set("Content-Type", "text/plain")
		w.WriteHeader(f.Status)
		fmt.Fprintln(w, msg)
		return
	}
	switch {
	case msg == "" && f.Status == http.StatusNotFound:
		msg = "404 Project Not Found"
	case msg == "":
		msg = fmt.Sprintf("%d %s", f.Status, http.StatusText(f.Status))
	}
	switch f.Status {
	case http.StatusBadRequest:
		writeJSON(w, f.Status, map[string]any{"error": msg})
	case http.StatusConflict, http.StatusUnprocessableEntity:
		writeJSON(w, f.Status, map[string]any{"message": []string{msg}})
	default:
		writeJSON(w, f.Status, map[string]any{"message": msg})
	}
}

func (g gitlab) webURL(p *PR) string {
	return fmt.Sprintf("%s/%s/-/merge_requests/%d", g.s.URL, p.Repo, p.Number)
}

func (g gitlab) getProject(w http.ResponseWriter, r *http.Request, rp *repo) {
	writeJSON(w, http.StatusOK, g.projectJSON(rp))
}

// listMRs filters by state (opened, closed or all, the default),
// source_branch and target_branch, and pages with GitLab's X-Page headers.
func (g gitlab) listMRs(w http.ResponseWriter, r *http.Request, rp *repo) {
	q := r.URL.Query()
	state := map[string]string{"": "all", "opened": "open"}[q.Get("state")]
	g.s.list(w, r, rp, listing{state: cmp.Or(state, q.Get("state")), sizeKey: "per_page", def: 20, most: 100,
		keep: func(p *PR) bool {
			return (q.Get("source_branch") == "" || q.Get("source_branch") == p.Head) &&
				(q.Get("target_branch") == "" || q.Get("target_branch") == p.Base)
		},
		headers: func(h http.Header, pg paging) {
			h.Set("X-Page", strconv.Itoa(pg.page))
			h.Set("X-Per-Page", strconv.Itoa(pg.size))
			h.Set("X-Total", strconv.Itoa(pg.total))
			h.Set("X-Total-Pages", strconv.Itoa(pg.pages))
			h.Set("X-Prev-Page", "")
			if pg.page > 1 {
				h.Set("X-Prev-Page", strconv.Itoa(pg.page-1))
			}
			h.Set("X-Next-Page", "")
			if pg.page < pg.pages {
				h.Set("X-Next-Page", strconv.Itoa(pg.page+1))
			}
		}})
}

// createMR validates as GitLab does: Grape's 400 for a missing or blank
// branch, the model's 400 for a blank title, 422 for a source that is the
// target, 409 for an open merge request from the same source into the
// same target.
func (g gitlab) createMR(w http.ResponseWriter, r *http.Request, rp *repo) {
	var in struct {
		Title, Description *string
		SourceBranch       *string `json:"source_branch"`
		TargetBranch       *string `json:"target_branch"`
	}
	if !readJSON(w, r, &in) {
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": "400 Bad request - the body is not JSON"})
		return
	}
	var problems []string
	for _, f := range []struct {
		name string
		v    *string
	}{{"source_branch", in.SourceBranch}, {"target_branch", in.TargetBranch}, {"title", in.Title}} {
		switch {
		case f.v == nil:
			problems = append(problems, f.name+" is missing")
		case *f.v == "" && f.name != "title":
			problems = append(problems, f.name+" is empty")
		}
	}
	if len(problems) > 0 {
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": strings.Join(problems, ", ")})
		return
	}
	if *in.Title == "" {
		writeJSON(w, http.StatusBadRequest, map[string]any{"message": map[string]any{"title": []string{"can't be blank"}}})
		return
	}
	want := PR{Title: *in.Title, Head: *in.SourceBranch, Base: *in.TargetBranch, Draft: strings.HasPrefix(*in.Title, "Draft:")}
	if in.Description != nil {
		want.Body = *in.Description
	}
	if p := g.s.create(w, rp, want); p != nil {
		writeJSON(w, http.StatusCreated, g.prJSON(p, rp))
	}
}

// refuse is GitLab's 422 for a source that is the target, its 409 for a
// merge request open already.
func (gitlab) refuse(w http.ResponseWriter, _ *repo, _, dup *PR) {
	if dup == nil {
		writeJSON(w, http.StatusUnprocessableEntity, map[string]any{"message": []string{"You can't use same project/branch for source and target"}})
		return
	}
	writeJSON(w, http.StatusConflict, map[string]any{"message": []string{
		fmt.Sprintf("Another open merge request already exists for this source branch: !%d", dup.Number)}})
}

func (g gitlab) namespaceJSON(rp *repo) map[string]any {
	name := rp.owner[strings.LastIndex(rp.owner, "/")+1:]
	return map[string]any{"id": 100 + rp.id, "name": name, "path": name, "kind": "group", "full_path": rp.owner,
		"parent_id": nil, "avatar_url": nil, "web_url": g.s.URL + "/groups/" + rp.owner}
}

func (g gitlab) projectJSON(rp *repo) map[string]any {
	full, host := rp.fullName(), strings.TrimPrefix(g.s.URL, "http://")
	ts := repoCreated
	return map[string]any{
		"id": rp.id, "description": "", "name": rp.name, "path": rp.name,
		"name_with_namespace": strings.ReplaceAll(rp.owner, "/", " / ") + " / " + rp.name, "path_with_namespace": full,
		"created_at": ts, "last_activity_at": ts, "default_branch": rp.defaultBranch, "tag_list": []string{}, "topics": []string{},
		"ssh_url_to_repo": "git@" + host + ":" + full + ".git", "http_url_to_repo": g.s.URL + "/" + full + ".git",
		"web_url": g.s.URL + "/" + full, "readme_url": nil, "avatar_url": nil, "forks_count": 0, "star_count": 0,
		"namespace": g.namespaceJSON(rp), "visibility": "private", "empty_repo": rp.defaultBranch == "", "archived": false,
		"merge_requests_enabled": true, "issues_enabled": true, "open_issues_count": 0,
		"_links": map[string]any{"self": g.s.URL + "/api/v4/projects/" + strconv.Itoa(rp.id),
			"merge_requests": g.s.URL + "/api/v4/projects/" + strconv.Itoa(rp.id) + "/merge_requests"},
	}
}

func (g gitlab) prJSON(p *PR, rp *repo) map[string]any {
	ts := p.stamp()
	state := p.State
	if state == "open" {
		state = "opened"
	}
	ref := fmt.Sprintf("!%d", p.Number)
	author, _, _ := strings.Cut(p.HeadOwner, "/") // a user, not a group path
	return map[string]any{
		"id": 1000 + p.Number, "iid": p.Number, "project_id": rp.id, "title": p.Title, "description": p.Body,
		"state": state, "created_at": ts, "updated_at": ts, "merged_by": nil, "merge_user": nil, "merged_at": nil,
		"closed_by": nil, "closed_at": nil, "target_branch": p.Base, "source_branch": p.Head,
		"user_notes_count": 0, "upvotes": 0, "downvotes": 0,
		"author": map[string]any{"id": 1, "username": author, "name": author, "state": "active",
			"locked": false, "avatar_url": nil, "web_url": g.s.URL + "/" + author},
		"assignees": []any{}, "assignee": nil, "reviewers": []any{},
		"source_project_id": rp.id, "target_project_id": rp.id, "labels": []string{},
		"draft": p.Draft, "work_in_progress": p.Draft, "milestone": nil, "merge_when_pipeline_succeeds": false,
		"merge_status": "can_be_merged", "detailed_merge_status": "mergeable",
		"sha": strings.Repeat("0", 40), "merge_commit_sha": nil, "squash_commit_sha": nil,
		"discussion_locked": nil, "should_remove_source_branch": nil, "force_remove_source_branch": false,
		"reference": ref, "references": map[string]any{"short": ref, "relative": ref, "full": p.Repo + ref},
		"web_url": p.HTMLURL, "squash": false, "has_conflicts": false, "blocking_discussions_resolved": true,
		"time_stats":             map[string]any{"time_estimate": 0, "total_time_spent": 0, "human_time_estimate": nil, "human_total_time_spent": nil},
		"task_completion_status": map[string]any{"count": 0, "completed_count": 0},
	}
}
