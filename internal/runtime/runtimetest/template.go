package runtimetest

import (
	"context"
	"testing"
	"time"

	"github.com/corral-sh/corral/internal/testenv"

	"github.com/corral-sh/corral/internal/template"
)

// Template makes sure the backend imp has the "minimal" template —
// building it with mmdebstrap on first use (about 20 s; cached in
// template.DefaultCacheDir across runs) — and returns its ref for
// Options.Template. It skips the test when the template cannot be built
// here (no mmdebstrap, no Debian mirror), saying why.
func Template(t testing.TB, imp template.Importer) string {
	t.Helper()
	return NamedTemplate(t, imp, "minimal")
}

// NamedTemplate is Template for any template ("desktop", say). A large
// one takes minutes to build the first time (the desktop template about
// 8); the tarball is cached like the minimal one's.
func NamedTemplate(t testing.TB, imp template.Importer, name string) string {
	t.Helper()
	def, err := template.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	if err := template.Ensure(ctx, imp, def.Name, template.Options{}); err != nil {
		testenv.Unavailable(t, "cannot provide template %s: %v", def.Ref(), err)
	}
	return def.Ref()
}
