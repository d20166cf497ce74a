//go:build !slim

package cli

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/corral-sh/corral/api/cpapi"
	"github.com/corral-sh/corral/client"
	"github.com/corral-sh/corral/internal/userconfig"
)

func TestTarget(t *testing.T) {
	cfgPath := filepath.Join(t.TempDir(), "config.json")
	if err := userconfig.Save(cfgPath, userconfig.Config{URL: "http://127.0.0.1:7070", Token: "crl_file"}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name               string
		flagURL, flagToken string
		envURL, envToken   string
		config             string
		wantURL, wantToken string
	}{
		{"config file", "", "", "", "", cfgPath, "http://127.0.0.1:7070", "crl_file"},
		{"no config file", "", "", "", "", filepath.Join(t.TempDir(), "none.json"), defaultControlPlaneURL, ""},
		{"env over file", "", "", "http://localhost:7070/", "crl_env", cfgPath, "http://localhost:7070", "crl_env"},
		{"flags over env", "http://h:1", "crl_flag", "http://localhost:7070", "crl_env", cfgPath, "http://h:1", "crl_flag"},
		{"file token for the same server", "http://localhost:7070", "", "", "", cfgPath, "http://localhost:7070", "crl_file"},
		{"file token kept from another server", "https://cp.example.com", "", "", "", cfgPath, "https://cp.example.com", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("CORRAL_URL", tt.envURL)
			t.Setenv("CORRAL_TOKEN", tt.envToken)
			t.Setenv("CORRAL_CONFIG", tt.config)
			f := cpFlags{url: tt.flagURL, token: tt.flagToken}
			u, tok, err := f.target()
			if err != nil || u != tt.wantURL || tok != tt.wantToken {
				t.Errorf("target() = %q, %q, %v; want %q, %q", u, tok, err, tt.wantURL, tt.wantToken)
			}
		})
	}
}

func TestSplitRepo(t *testing.T) {
	tests := []struct{ in, url, ref string }{
		{"https://github.com/a/b", "https://github.com/a/b", ""},
		{"https://github.com/a/b@main", "https://github.com/a/b", "main"},
		{"https://user@github.com/a/b", "https://user@github.com/a/b", ""},
		{"https://user@github.com/a/b@v1.2", "https://user@github.com/a/b", "v1.2"},
		{"git@github.com:a/b.git", "git@github.com:a/b.git", ""},
		{"git@github.com:a/b.git@dev", "git@github.com:a/b.git", "dev"},
		{"https://host", "https://host", ""},
	}
	for _, tt := range tests {
		if u, ref := splitRepo(tt.in); u != tt.url || ref != tt.ref {
			t.Errorf("splitRepo(%q) = %q, %q; want %q, %q", tt.in, u, ref, tt.url, tt.ref)
		}
	}
}

func TestParseMemoryMB(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"", 0, true}, {"2048", 2048, true}, {"512M", 512, true}, {"512mi", 512, true},
		{"2G", 2048, true}, {"1.5gib", 1536, true}, {"0", 0, false}, {"2x", 0, false}, {"-1", 0, false},
	}
	for _, tt := range tests {
		got, err := parseMemoryMB(tt.in)
		if got != tt.want || (err == nil) != tt.ok {
			t.Errorf("parseMemoryMB(%q) = %d, %v; want %d, ok %v", tt.in, got, err, tt.want, tt.ok)
		}
	}
}

func TestProblemMessage(t *testing.T) {
	tests := []struct {
		name string
		err  client.APIError
		want string
	}{
		{"detail says it", client.APIError{Status: 404, Title: "Not Found", Detail: `job "x" not found`}, `job "x" not found`},
		{"title and detail", client.APIError{Status: 409, Title: "Conflict", Detail: "the job is done"}, "conflict: the job is done"},
		{"no detail", client.APIError{Status: 502, Title: "Bad Gateway"}, "bad gateway"},
	}
	for _, tt := range tests {
		if got := problemMessage(&tt.err); got != tt.want {
			t.Errorf("%s: problemMessage = %q; want %q", tt.name, got, tt.want)
		}
	}
}

func TestJobExit(t *testing.T) {
	code := func(n int) *cpapi.JobResult { return &cpapi.JobResult{ExitCode: &n} }
	tests := []struct {
		name string
		job  cpapi.Job
		want int
	}{
		{"completed", cpapi.Job{Status: cpapi.JobCompleted, Result: code(0)}, 0},
		{"failed with a code", cpapi.Job{Status: cpapi.JobFailed, Result: code(3)}, 3},
		{"failed without a code", cpapi.Job{Status: cpapi.JobFailed, StatusReason: cpapi.ReasonSandboxLost}, 1},
		{"failed with an unknown code", cpapi.Job{Status: cpapi.JobFailed, Result: code(-1)}, 1},
		{"cancelled", cpapi.Job{Status: cpapi.JobCancelled}, 1},
	}
	for _, tt := range tests {
		if got := exitCode(jobExit(&tt.job)); got != tt.want {
			t.Errorf("%s: exit code %d; want %d", tt.name, got, tt.want)
		}
	}
}

func TestShortDuration(t *testing.T) {
	tests := []struct {
		d    time.Duration
		want string
	}{
		{-time.Second, "0s"}, {45 * time.Second, "45s"}, {12 * time.Minute, "12m"},
		{3 * time.Hour, "3h"}, {47 * time.Hour, "47h"}, {5 * 24 * time.Hour, "5d"},
	}
	for _, tt := range tests {
		if got := shortDuration(tt.d); got != tt.want {
			t.Errorf("shortDuration(%v) = %q; want %q", tt.d, got, tt.want)
		}
	}
	if got := oneLine("a\nlong  task\twith words", 12); got != "a long task…" {
		t.Errorf("oneLine = %q", got)
	}
	if got := byteSize(1536); got != "1.5 KiB" {
		t.Errorf("byteSize(1536) = %q", got)
	}
}
