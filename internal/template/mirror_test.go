package template

import (
	"os"
	"path/filepath"
	"testing"
)

func TestHostMirror(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		want  string
	}{
		{"none", nil, FallbackMirror},
		{"sources.list", map[string]string{
			"sources.list": "# comment\ndeb-src http://src/debian bookworm main\ndeb http://list/debian bookworm main\n",
		}, "http://list/debian"},
		{"list with options", map[string]string{
			"sources.list": "deb [ arch=amd64 signed-by=/k.gpg ] http://opt/debian bookworm main # x\n",
		}, "http://opt/debian"},
		{"other suite skipped", map[string]string{
			"sources.list":          "deb https://packages.cloud.google.com/apt cloud-sdk-bookworm main\n",
			"sources.list.d/a.list": "deb http://ubuntu/ jammy main\n",
			"sources.list.d/z.list": "deb http://z/debian bookworm main\n",
		}, "http://z/debian"},
		{"deb822", map[string]string{
			"sources.list.d/debian.sources": "Types: deb\n# http://snapshot\nURIs: http://deb822/debian\nSuites: bookworm bookworm-updates\nComponents: main\n\nTypes: deb\nURIs: http://sec/debian-security\nSuites: bookworm-security\n",
		}, "http://deb822/debian"},
		{"deb822 disabled and deb-src", map[string]string{
			"sources.list.d/a.sources": "Types: deb\nURIs: http://off/debian\nSuites: bookworm\nEnabled: no\n\nTypes: deb-src\nURIs: http://src/debian\nSuites: bookworm\n\nTypes: deb-src deb\nURIs:\n http://cont/debian\nSuites: bookworm\n",
		}, "http://cont/debian"},
		{"disabled file name", map[string]string{
			"sources.list.d/n.sources.disabled": "Types: deb\nURIs: http://n/debian\nSuites: bookworm\n",
		}, FallbackMirror},
		{"list before sources.list.d", map[string]string{
			"sources.list":                  "deb http://first/debian bookworm main\n",
			"sources.list.d/debian.sources": "Types: deb\nURIs: http://second/debian\nSuites: bookworm\n",
		}, "http://first/debian"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, text := range tt.files {
				p := filepath.Join(dir, name)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if got := HostMirror(dir, "bookworm"); got != tt.want {
				t.Errorf("HostMirror() = %q; want %q", got, tt.want)
			}
		})
	}
}
