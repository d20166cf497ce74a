package lsp

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/corral-sh/corral/api/sandboxapi"
	"github.com/corral-sh/corral/internal/errdefs"
)

// language says how to run the servers of one language.
type language struct {
	// commands are the servers to try, best first; the first whose
	// executable is found runs.
	commands [][]string
	// languageID names a document's language for didOpen, by extension.
	languageID func(path string) string
	// section and settings answer workspace/configuration for the
	// server's own section, and are its initializationOptions.
	section  string
	settings map[string]any
	// settle is how long diagnostics wait after a publication for the
	// document's version, in case the server publishes it again (a later
	// phase of checks).
	settle time.Duration
}

var languages = map[string]language{
	sandboxapi.LanguageGo: {
		commands: [][]string{{"gopls"}},
		languageID: func(p string) string {
			switch filepath.Base(p) {
			case "go.mod":
				return "go.mod"
			case "go.sum":
				return "go.sum"
			case "go.work":
				return "go.work"
			}
			return "go"
		},
		section: "gopls",
		// Pull diagnostics answer for the document as it is, analyzers
		// included, loading its package first if need be. For the push
		// fallback (an older gopls): by default gopls publishes a version
		// twice, type errors at once and everything a second later; with
		// no delay it publishes once, complete.
		settings: map[string]any{"pullDiagnostics": true, "diagnosticsDelay": "0s"},
		settle:   50 * time.Millisecond,
	},
	sandboxapi.LanguagePython: {
		commands: [][]string{
			{"pyright-langserver", "--stdio"},
			{"basedpyright-langserver", "--stdio"},
			{"pylsp"},
		},
		languageID: func(string) string { return "python" },
		settle:     100 * time.Millisecond,
	},
	sandboxapi.LanguageTypeScript: {
		commands: [][]string{{"typescript-language-server", "--stdio"}},
		languageID: func(p string) string {
			switch strings.ToLower(filepath.Ext(p)) {
			case ".tsx":
				return "typescriptreact"
			case ".js", ".mjs", ".cjs":
				return "javascript"
			case ".jsx":
				return "javascriptreact"
			}
			return "typescript"
		},
		// tsserver reports syntax, then semantic, then suggestion
		// diagnostics, each published as it comes.
		settle: 250 * time.Millisecond,
	},
}

// lookup finds a command's executable: on $PATH, then where `go install`
// and `npm install -g --prefix ~/.local` put programs.
func lookup(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	var dirs []string
	if gp := os.Getenv("GOPATH"); gp != "" {
		dirs = append(dirs, filepath.Join(strings.Split(gp, string(filepath.ListSeparator))[0], "bin"))
	}
	if home, err := os.UserHomeDir(); err == nil {
		dirs = append(dirs, filepath.Join(home, "go", "bin"), filepath.Join(home, ".local", "bin"))
	}
	for _, d := range dirs {
		p := filepath.Join(d, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", exec.ErrNotFound
}

// command picks the server to run for lang: its argv with the executable
// resolved.
func command(lang string, find func(string) (string, error)) ([]string, error) {
	l, ok := languages[lang]
	if !ok {
		return nil, errdefs.Invalidf("language %q must be %q, %q or %q", lang,
			sandboxapi.LanguageGo, sandboxapi.LanguagePython, sandboxapi.LanguageTypeScript)
	}
	var names []string
	for _, c := range l.commands {
		if p, err := find(c[0]); err == nil {
			return append([]string{p}, c[1:]...), nil
		}
		names = append(names, c[0])
	}
	return nil, errdefs.Unprocessablef("no %s language server in this sandbox (looked for %s)", lang, strings.Join(names, ", "))
}
