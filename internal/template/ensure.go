package template

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
)

// Importer is a runtime backend that can hold templates. Backends that
// implement it (docker, containerd, bwrap) are found by type assertion.
type Importer interface {
	// ImportTemplate loads a root filesystem tarball as the template
	// name, replacing one of that name.
	ImportTemplate(ctx context.Context, rootfsTar, name string) error
	// HasTemplate reports whether the backend has the template name.
	HasTemplate(ctx context.Context, name string) (bool, error)
}

// Builds is an Importer that remembers which build of a template it
// holds: the BuildID of the tarball it imported ("" when it does not know,
// e.g. for a template imported before it kept track).
type Builds interface {
	TemplateBuild(ctx context.Context, name string) (string, error)
}

// BuildID names the build a tarball holds: its file name without ".tar"
// ("default-3c2a33b0ac57"), which carries the hash of the definition.
func BuildID(rootfsTar string) string {
	base := filepath.Base(rootfsTar)
	for _, ext := range []string{".tar.gz", ".tgz", ".tar"} {
		if b, ok := strings.CutSuffix(base, ext); ok {
			return b
		}
	}
	return base
}

// Current reports whether imp holds the current build of template def:
// it has the template and, if it keeps track of builds, the one the
// definition makes now (so a template from an older Corral, say without
// the agent CLIs, is imported again).
func Current(ctx context.Context, imp Importer, def Definition, opts Options) (bool, error) {
	ok, err := imp.HasTemplate(ctx, def.Ref())
	if err != nil || !ok {
		return false, err
	}
	b, tracks := imp.(Builds)
	if !tracks {
		return true, nil
	}
	have, err := b.TemplateBuild(ctx, def.Ref())
	if err != nil {
		return false, err
	}
	opts.Name = def.Name
	plan, err := NewPlan(opts)
	if err != nil {
		return false, err
	}
	return have == BuildID(plan.Path), nil
}

// Ensure makes sure imp has the current build of template name (as Lookup
// takes it): if it does not, Ensure builds the tarball (or finds it in
// the cache) with opts, whose Name it ignores, and imports it under the
// template's ref.
func Ensure(ctx context.Context, imp Importer, name string, opts Options) error {
	def, err := Lookup(name)
	if err != nil {
		return err
	}
	ok, err := Current(ctx, imp, def, opts)
	if err != nil {
		return fmt.Errorf("template %s: %w", def.Ref(), err)
	}
	if ok {
		return nil
	}
	opts.Name = def.Name
	path, err := Build(ctx, opts)
	if err != nil {
		return err
	}
	if err := imp.ImportTemplate(ctx, path, def.Ref()); err != nil {
		return fmt.Errorf("import template %s: %w", def.Ref(), err)
	}
	return nil
}
