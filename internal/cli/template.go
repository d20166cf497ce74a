//go:build !slim

package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/corral-sh/corral/internal/errdefs"
	"github.com/corral-sh/corral/internal/runtime/catalog"
	"github.com/corral-sh/corral/internal/template"
)

// Values of --runtime besides a backend's name.
const (
	runtimeAll  = "all"  // every available backend that holds templates
	runtimeNone = "none" // build the tarball only
)

// importer is a backend that holds templates, opened for one command.
type importer struct {
	name string
	imp  template.Importer
}

// skipped is a backend left out, and why.
type skipped struct{ name, reason string }

// findImporters resolves --runtime into backends; the caller calls done.
type findImporters func(ctx context.Context, cfg catalog.Config, which string) (imps []importer, skips []skipped, done func(), err error)

func templateCmd() *cobra.Command { return newTemplateCmd(catalogImporters) }

func newTemplateCmd(find findImporters) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "template",
		Short: "Build sandbox templates and load them into the runtime backends",
		Long: `Templates are Debian root filesystems built with mmdebstrap (` + strings.Join(template.Names(), ", ") + `)
and imported into the backends that hold images, under the name corral-<name>.`,
	}
	cmd.AddCommand(templateBuildCmd(find), templateLsCmd(find))
	return cmd
}

// templateFlags are the flags of the template commands.
type templateFlags struct {
	catalogFlags
	runtime, cacheDir, mirror string
}

func (f *templateFlags) register(cmd *cobra.Command, runtimeHelp string) {
	f.catalogFlags.register(cmd)
	fs := cmd.Flags()
	fs.StringVar(&f.runtime, "runtime", runtimeAll, runtimeHelp)
	fs.StringVar(&f.cacheDir, "cache-dir", template.DefaultCacheDir, "directory of built template tarballs")
	fs.StringVar(&f.mirror, "mirror", "", "Debian mirror (default: the host's apt sources for the suite, else "+template.FallbackMirror+")")
}

func templateBuildCmd(find findImporters) *cobra.Command {
	var (
		f       templateFlags
		name    string
		missing bool
	)
	cmd := &cobra.Command{
		Use:   "build",
		Short: "Build a template and import it into the runtime backends",
		Long: `build makes the template's root filesystem tarball with mmdebstrap (or finds
it in the cache, keyed by a hash of the definition and the mirror), then
imports it as corral-<name> into every available backend that holds
templates, or only the one --runtime names ("none": the tarball only).
mmdebstrap's output goes to stderr.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			def, err := template.Lookup(name)
			if err != nil {
				return err
			}
			// Find the backends first: a wrong --runtime fails now, not
			// after a long build.
			imps, skips, done, err := find(cmd.Context(), f.cfg, f.runtime)
			if err != nil {
				return err
			}
			defer done()
			out := cmd.OutOrStdout()
			for _, s := range skips {
				fmt.Fprintf(out, "%s: skipped: %s\n", s.name, s.reason)
			}
			opts := template.Options{Name: def.Name, CacheDir: f.cacheDir, Mirror: f.mirror, Log: cmd.ErrOrStderr()}
			if missing {
				imps = withoutTemplate(cmd.Context(), out, imps, def, opts)
				if len(imps) == 0 {
					return nil
				}
			}
			return buildTemplate(cmd.Context(), out, opts, imps)
		},
	}
	f.register(cmd, `backend to import into: a name, "all" available ones, or "none"`)
	cmd.Flags().StringVar(&name, "name", "default", "template: "+strings.Join(template.Names(), ", "))
	cmd.Flags().BoolVar(&missing, "missing", false, "only for backends that do not have the template yet (make up uses this)")
	return cmd
}

// withoutTemplate keeps the backends that lack the current build of def
// (they lack it, or hold one an older definition made), saying which have
// it.
func withoutTemplate(ctx context.Context, out io.Writer, imps []importer, def template.Definition, opts template.Options) []importer {
	var keep []importer
	for _, im := range imps {
		if ok, err := template.Current(ctx, im.imp, def, opts); err == nil && ok {
			fmt.Fprintf(out, "%s: has %s\n", im.name, def.Ref())
			continue
		}
		keep = append(keep, im)
	}
	return keep
}

// buildTemplate builds opts.Name's tarball and imports it into each
// backend, going on past a failed import; the error joins the failures.
func buildTemplate(ctx context.Context, out io.Writer, opts template.Options, imps []importer) error {
	plan, err := template.NewPlan(opts)
	if err != nil {
		return err
	}
	how := "cached"
	if _, err := os.Stat(plan.Path); err != nil {
		how = "built in "
	}
	start := time.Now()
	path, err := template.Build(ctx, opts)
	if err != nil {
		return err
	}
	if how != "cached" {
		how += time.Since(start).Round(time.Second).String()
	}
	size := "?"
	if fi, err := os.Stat(path); err == nil {
		size = fmt.Sprintf("%d MiB", fi.Size()>>20)
	}
	ref := plan.Def.Ref()
	fmt.Fprintf(out, "%s: %s (%s, %s)\n", ref, path, size, how)
	var errs []error
	for _, im := range imps {
		fmt.Fprintf(out, "%s: importing %s ... ", im.name, ref)
		start := time.Now()
		if err := im.imp.ImportTemplate(ctx, path, ref); err != nil {
			fmt.Fprintln(out, "failed")
			errs = append(errs, fmt.Errorf("%s: %w", im.name, err))
			continue
		}
		fmt.Fprintf(out, "done in %s\n", time.Since(start).Round(time.Millisecond))
	}
	return errors.Join(errs...)
}

func templateLsCmd(find findImporters) *cobra.Command {
	var f templateFlags
	cmd := &cobra.Command{
		Use:   "ls",
		Short: "Show which templates are built and which backends have them",
		Long: `ls shows, for every template, whether its tarball is in the cache and
whether each available backend that holds templates has it (as corral-<name>).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			imps, skips, done, err := find(cmd.Context(), f.cfg, f.runtime)
			if err != nil {
				return err
			}
			defer done()
			opts := template.Options{CacheDir: f.cacheDir, Mirror: f.mirror}
			if err := listTemplates(cmd.Context(), cmd.OutOrStdout(), opts, imps); err != nil {
				return err
			}
			for _, s := range skips {
				fmt.Fprintf(cmd.ErrOrStderr(), "%s: not shown: %s\n", s.name, s.reason)
			}
			return nil
		},
	}
	f.register(cmd, `backend to look in: a name, or "all" available ones`)
	return cmd
}

// listTemplates writes a table: one row per template, with whether its
// tarball (for opts' cache and mirror) exists and whether each backend
// has it.
func listTemplates(ctx context.Context, out io.Writer, opts template.Options, imps []importer) error {
	tw := tabwriter.NewWriter(out, 0, 8, 2, ' ', 0)
	fmt.Fprint(tw, "TEMPLATE\tREF\tTARBALL")
	for _, im := range imps {
		fmt.Fprintf(tw, "\t%s", strings.ToUpper(im.name))
	}
	fmt.Fprintln(tw)
	for _, def := range template.Definitions() {
		opts.Name = def.Name
		plan, err := template.NewPlan(opts)
		if err != nil {
			return err
		}
		cached := "-"
		if _, err := os.Stat(plan.Path); err == nil {
			cached = plan.Path
		}
		fmt.Fprintf(tw, "%s\t%s\t%s", def.Name, def.Ref(), cached)
		for _, im := range imps {
			has, err := im.imp.HasTemplate(ctx, def.Ref())
			if err != nil {
				return fmt.Errorf("%s: %w", im.name, err)
			}
			fmt.Fprintf(tw, "\t%s", yesNo(has))
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// catalogImporters opens the backends --runtime names: with "all", every
// available one that holds templates (the others are skipped, with the
// reason); with "none", none; with a name, that one, which must be
// available and hold templates.
func catalogImporters(ctx context.Context, cfg catalog.Config, which string) ([]importer, []skipped, func(), error) {
	var (
		imps   []importer
		skips  []skipped
		opened []func()
	)
	done := func() {
		for _, c := range opened {
			c()
		}
	}
	switch which {
	case runtimeNone:
		return nil, nil, done, nil
	case runtimeAll:
		for _, name := range catalog.Names() {
			r, err := catalog.Open(ctx, name, cfg)
			if err != nil {
				skips = append(skips, skipped{name, err.Error()})
				continue
			}
			opened = append(opened, func() { _ = catalog.Close(r) })
			imp, ok := r.(template.Importer)
			if !ok {
				skips = append(skips, skipped{name, "does not hold templates"})
				continue
			}
			imps = append(imps, importer{name, imp})
		}
		return imps, skips, done, nil
	}
	r, err := catalog.Open(ctx, which, cfg)
	if err != nil {
		return nil, nil, done, err
	}
	opened = append(opened, func() { _ = catalog.Close(r) })
	imp, ok := r.(template.Importer)
	if !ok {
		done()
		return nil, nil, func() {}, errdefs.Invalidf("runtime %s does not hold templates (it runs sandboxes without images)", which)
	}
	return []importer{{which, imp}}, nil, done, nil
}
