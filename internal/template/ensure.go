package template

import (
	"context"
	"fmt"
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

// Ensure makes sure imp has the template name (as Lookup takes it): if it
// does not, Ensure builds the tarball (or finds it in the cache) with
// opts, whose Name it ignores, and imports it under the template's ref.
func Ensure(ctx context.Context, imp Importer, name string, opts Options) error {
	def, err := Lookup(name)
	if err != nil {
		return err
	}
	ok, err := imp.HasTemplate(ctx, def.Ref())
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
