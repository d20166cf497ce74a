package template

import (
	"bufio"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// FallbackMirror is used when the host's apt sources name no mirror for a
// template's suite.
const FallbackMirror = "http://deb.debian.org/debian"

// HostMirror returns the first "deb" URI in the apt configuration under
// aptDir (normally /etc/apt: sources.list, then sources.list.d/*.list and
// *.sources in name order) that serves suite, or FallbackMirror. Matching
// the suite skips third-party repositories listed before Debian's.
func HostMirror(aptDir, suite string) string {
	files := []string{filepath.Join(aptDir, "sources.list")}
	more, _ := filepath.Glob(filepath.Join(aptDir, "sources.list.d", "*"))
	slices.Sort(more)
	files = append(files, more...)
	for _, f := range files {
		var uri string
		switch {
		case strings.HasSuffix(f, ".list"):
			uri = listMirror(f, suite)
		case strings.HasSuffix(f, ".sources"):
			uri = deb822Mirror(f, suite)
		}
		if uri != "" {
			return uri
		}
	}
	return FallbackMirror
}

// listMirror reads one-line-style sources:
// "deb [option=value ...] uri suite component...".
func listMirror(file, suite string) string {
	f, err := os.Open(file)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line, _, _ := strings.Cut(sc.Text(), "#")
		fields := strings.Fields(line)
		if len(fields) < 3 || fields[0] != "deb" {
			continue
		}
		fields = fields[1:]
		if strings.HasPrefix(fields[0], "[") { // options
			end := slices.IndexFunc(fields, func(s string) bool { return strings.HasSuffix(s, "]") })
			if end < 0 {
				continue
			}
			fields = fields[end+1:]
		}
		if len(fields) >= 2 && fields[1] == suite {
			return fields[0]
		}
	}
	return ""
}

// deb822Mirror reads deb822-style sources: stanzas of "Types:", "URIs:",
// "Suites:" and "Enabled:" fields separated by blank lines.
func deb822Mirror(file, suite string) string {
	data, err := os.ReadFile(file)
	if err != nil {
		return ""
	}
	for _, stanza := range parseDeb822(string(data)) {
		if strings.EqualFold(stanza["enabled"], "no") ||
			!slices.Contains(strings.Fields(stanza["types"]), "deb") ||
			!slices.Contains(strings.Fields(stanza["suites"]), suite) {
			continue
		}
		if uris := strings.Fields(stanza["uris"]); len(uris) > 0 {
			return uris[0]
		}
	}
	return ""
}

// parseDeb822 splits text into stanzas of fields keyed by lower-case name;
// continuation lines are joined to their field.
func parseDeb822(text string) []map[string]string {
	var stanzas []map[string]string
	cur, last := map[string]string{}, ""
	for line := range strings.SplitSeq(text, "\n") {
		switch {
		case strings.HasPrefix(line, "#"):
		case strings.TrimSpace(line) == "":
			if len(cur) > 0 {
				stanzas = append(stanzas, cur)
			}
			cur, last = map[string]string{}, ""
		case line[0] == ' ' || line[0] == '\t':
			if last != "" {
				cur[last] += " " + strings.TrimSpace(line)
			}
		default:
			k, v, ok := strings.Cut(line, ":")
			if !ok {
				continue
			}
			last = strings.ToLower(strings.TrimSpace(k))
			cur[last] = strings.TrimSpace(v)
		}
	}
	if len(cur) > 0 {
		stanzas = append(stanzas, cur)
	}
	return stanzas
}
