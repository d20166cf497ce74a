// Package version reports the build's version, set at link time with
// -ldflags "-X github.com/corral-sh/corral/internal/version.Version=...".
package version

import "runtime/debug"

// Version is the release version; "dev" when not set at link time.
var Version = "dev"

// String returns Version, with the VCS revision for dev builds.
func String() string {
	if Version != "dev" {
		return Version
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 12 {
				return "dev-" + s.Value[:12]
			}
		}
	}
	return Version
}
