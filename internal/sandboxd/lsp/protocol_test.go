package lsp

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/corral-sh/corral/internal/errdefs"
)

func TestGlobRegexp(t *testing.T) {
	for _, c := range []struct {
		glob  string
		path  string
		match bool
	}{
		{`"**/*.go"`, "/w/p/main.go", true},
		{`"**/*.go"`, "/w/p/main.gox", false},
		{`"**/*.{go,mod,sum}"`, "/w/go.mod", true},
		{`"**/*.{go,mod,sum}"`, "/w/go.work", false},
		{`"*.py"`, "/w/deep/a.py", true},
		{`"/w/p/*.ts"`, "/w/p/a.ts", true},
		{`"/w/p/*.ts"`, "/w/p/sub/a.ts", false},
		{`"**/test_?.py"`, "/w/test_1.py", true},
		{`"**/test_?.py"`, "/w/test_12.py", false},
		{`"**/[!a]*.js"`, "/w/b.js", true},
		{`"**/[!a]*.js"`, "/w/a.js", false},
		{`"**/a.(x)+"`, "/w/a.(x)+", true}, // regexp characters are literal
		{`{"baseUri":"file:///w/p","pattern":"**/*.go"}`, "/w/p/x/y.go", true},
		{`{"baseUri":"file:///w/p","pattern":"**/*.go"}`, "/w/q/y.go", false},
		{`{"baseUri":{"uri":"file:///w","name":"w"},"pattern":"*.mod"}`, "/w/go.mod", true},
	} {
		re := globRegexp(json.RawMessage(c.glob))
		if re == nil {
			t.Errorf("globRegexp(%s) = nil", c.glob)
			continue
		}
		if got := re.MatchString(c.path); got != c.match {
			t.Errorf("glob %s on %q = %v; want %v (regexp %s)", c.glob, c.path, got, c.match, re)
		}
	}
	for _, bad := range []string{`""`, `42`, `{"pattern":""}`} {
		if re := globRegexp(json.RawMessage(bad)); re != nil {
			t.Errorf("globRegexp(%s) = %s; want nil", bad, re)
		}
	}
}

func TestDecodeLocations(t *testing.T) {
	for _, c := range []struct {
		raw  string
		want int
	}{
		{`null`, 0},
		{`[]`, 0},
		{`{"uri":"file:///a","range":{"start":{"line":1,"character":2},"end":{"line":1,"character":3}}}`, 1},
		{`[{"uri":"file:///a","range":{"start":{"line":1,"character":2},"end":{"line":1,"character":3}}},{"uri":"file:///b","range":{"start":{"line":0,"character":0},"end":{"line":0,"character":1}}}]`, 2},
		{`[{"targetUri":"file:///c","targetRange":{"start":{"line":5,"character":0},"end":{"line":9,"character":1}},"targetSelectionRange":{"start":{"line":5,"character":5},"end":{"line":5,"character":9}}}]`, 1},
	} {
		ls, err := decodeLocations(json.RawMessage(c.raw))
		if err != nil || len(ls) != c.want {
			t.Errorf("decodeLocations(%s) = %d, %v; want %d", c.raw, len(ls), err, c.want)
		}
	}
	if _, err := decodeLocations(json.RawMessage(`"nonsense"`)); err == nil {
		t.Errorf("decodeLocations of a string = nil error")
	}
}

func TestHoverText(t *testing.T) {
	for _, c := range []struct{ raw, text, kind string }{
		{`null`, "", ""},
		{`"plain markdown"`, "plain markdown", "markdown"},
		{`{"kind":"plaintext","value":"v"}`, "v", "plaintext"},
		{`{"kind":"markdown","value":"**b**"}`, "**b**", "markdown"},
		{`{"language":"go","value":"func f()"}`, "```go\nfunc f()\n```", "markdown"},
		{`["a",{"language":"py","value":"x"}]`, "a\n\n```py\nx\n```", "markdown"},
	} {
		text, kind := hoverText(json.RawMessage(c.raw))
		if text != c.text || kind != c.kind {
			t.Errorf("hoverText(%s) = %q, %q; want %q, %q", c.raw, text, kind, c.text, c.kind)
		}
	}
}

func TestFlattenSymbols(t *testing.T) {
	raw := `[{"name":"T","kind":23,"range":{"start":{"line":0,"character":0},"end":{"line":5,"character":1}},
	  "selectionRange":{"start":{"line":0,"character":5},"end":{"line":0,"character":6}},
	  "children":[{"name":"M","kind":6,"range":{"start":{"line":2,"character":0},"end":{"line":3,"character":1}}}]},
	 {"name":"old","kind":12,"containerName":"pkg","location":{"uri":"file:///a","range":{"start":{"line":7,"character":0},"end":{"line":8,"character":0}}}}]`
	var syms []documentSymbol
	if err := json.Unmarshal([]byte(raw), &syms); err != nil {
		t.Fatal(err)
	}
	got := flattenSymbols(syms, 0, 100, nil)
	if len(got) != 3 ||
		got[0].Name != "T" || got[0].Kind != "struct" || got[0].Depth != 0 || got[0].SelectionRange.Start.Character != 5 ||
		got[1].Name != "M" || got[1].Kind != "method" || got[1].Depth != 1 || got[1].SelectionRange != got[1].Range ||
		got[2].Name != "old" || got[2].Kind != "function" || got[2].Range.Start.Line != 7 || got[2].Detail != "pkg" {
		t.Errorf("flattenSymbols = %+v", got)
	}
	if got := flattenSymbols(syms, 0, 2, nil); len(got) != 2 {
		t.Errorf("flattenSymbols with max 2 = %d symbols", len(got))
	}
}

func TestCurrent(t *testing.T) {
	v := func(n int) *int { return &n }
	for _, c := range []struct {
		name string
		p    *published
		d    document
		want bool
	}{
		{"nothing published", nil, document{version: 1}, false},
		{"older version", &published{version: v(1), seq: 9}, document{version: 2, sentSeq: 3}, false},
		{"this version", &published{version: v(2), seq: 4}, document{version: 2, sentSeq: 3}, true},
		{"a later version", &published{version: v(3), seq: 5}, document{version: 2, sentSeq: 3}, true},
		{"unversioned, before the change", &published{seq: 3}, document{version: 2, sentSeq: 3}, false},
		{"unversioned, after the change", &published{seq: 4}, document{version: 2, sentSeq: 3}, true},
	} {
		if got := current(c.p, c.d); got != c.want {
			t.Errorf("%s: current = %v; want %v", c.name, got, c.want)
		}
	}
}

func TestCommand(t *testing.T) {
	has := func(names ...string) func(string) (string, error) {
		return func(n string) (string, error) {
			for _, h := range names {
				if h == n {
					return "/usr/bin/" + n, nil
				}
			}
			return "", errors.New("not found")
		}
	}
	for _, c := range []struct {
		lang  string
		find  func(string) (string, error)
		want  string
		class error
	}{
		{"go", has("gopls"), "/usr/bin/gopls", nil},
		{"python", has("pylsp", "pyright-langserver"), "/usr/bin/pyright-langserver --stdio", nil},
		{"python", has("pylsp"), "/usr/bin/pylsp", nil},
		{"typescript", has("typescript-language-server"), "/usr/bin/typescript-language-server --stdio", nil},
		{"typescript", has(), "", errdefs.ErrUnprocessable},
		{"go", has("pylsp"), "", errdefs.ErrUnprocessable},
		{"rust", has("gopls"), "", errdefs.ErrInvalid},
		{"", has("gopls"), "", errdefs.ErrInvalid},
	} {
		argv, err := command(c.lang, c.find)
		if c.class != nil {
			if !errors.Is(err, c.class) {
				t.Errorf("command(%q) = %v, %v; want %v", c.lang, argv, err, c.class)
			}
			continue
		}
		if got := strings.Join(argv, " "); err != nil || got != c.want {
			t.Errorf("command(%q) = %q, %v; want %q", c.lang, got, err, c.want)
		}
	}
}
