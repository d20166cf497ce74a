package bwrap

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/corral-sh/corral/internal/errdefs"
	"github.com/corral-sh/corral/internal/runtime"
	"github.com/corral-sh/corral/internal/template"
)

var validTemplate = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,62}$`)

// templateName resolves a spec's template ("" is the default) and checks
// it is a name that can be a directory.
func templateName(name string) (string, error) {
	if name == "" {
		name = runtime.DefaultTemplate
	}
	if !validTemplate.MatchString(name) {
		return "", errdefs.Invalidf("template name %q must be lowercase letters, digits, '.', '_' or '-'", name)
	}
	return name, nil
}

// rootfs is the unpacked root file system of template name.
func (r *Runtime) rootfs(name string) string {
	return filepath.Join(r.cfg.TemplatesDir, name, "rootfs")
}

// buildFile, beside a template's rootfs, names the build it came from.
const buildFile = "build"

// TemplateBuild returns the build template name was imported from ("" if
// unknown); see template.Builds.
func (r *Runtime) TemplateBuild(ctx context.Context, name string) (string, error) {
	name, err := templateName(name)
	if err != nil {
		return "", err
	}
	b, err := os.ReadFile(filepath.Join(r.cfg.TemplatesDir, name, buildFile))
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("template %s: %w", name, err)
	}
	return strings.TrimSpace(string(b)), nil
}

// HasTemplate reports whether template name is unpacked (the template
// "host" always is).
func (r *Runtime) HasTemplate(ctx context.Context, name string) (bool, error) {
	name, err := templateName(name)
	if err != nil {
		return false, err
	}
	if name == HostTemplate {
		return true, nil
	}
	fi, err := os.Stat(r.rootfs(name))
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("template %s: %w", name, err)
	}
	return fi.IsDir(), nil
}

// ImportTemplate unpacks the root file system tarball rootfsTar as the
// template name (TemplatesDir/<name>/rootfs), replacing one of that name.
//
// It unpacks into a temporary directory beside the final one and renames
// it into place, so a template is either absent or complete, never half
// unpacked. GNU tar does the work: as root it keeps the tarball's numeric
// owners and modes (--numeric-owner, -p), skips members with ".." and
// strips leading "/", and defers symlinks that could redirect later
// members outside the directory. Device nodes it may create are inert:
// every bind mount of a sandbox is nodev and nosuid.
//
// Replacing a template removes the old tree, which running sandboxes of
// that template have mounted: delete them first, or import under a new
// name.
func (r *Runtime) ImportTemplate(ctx context.Context, rootfsTar, name string) error {
	name, err := templateName(name)
	if err != nil {
		return err
	}
	if name == HostTemplate {
		return errdefs.Invalidf("template name %q is reserved for the host's own file system", name)
	}
	if err := os.MkdirAll(r.cfg.TemplatesDir, 0o755); err != nil {
		return fmt.Errorf("templates dir: %w", err)
	}
	tmp, err := os.MkdirTemp(r.cfg.TemplatesDir, ".import-"+name+"-")
	if err != nil {
		return fmt.Errorf("templates dir: %w", err)
	}
	defer os.RemoveAll(tmp) // a no-op once renamed into place
	root := filepath.Join(tmp, "rootfs")
	if err := os.Chmod(tmp, 0o755); err != nil {
		return err
	}
	if err := os.Mkdir(root, 0o755); err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, "tar", "--numeric-owner", "-xpf", rootfsTar, "-C", root)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("unpack %s: %w: %s", rootfsTar, err, bytes.TrimSpace(out.Bytes()))
	}
	// tar applies the archive's mode to "./"; the sandbox user must be
	// able to enter the root whatever the archive says.
	if err := os.Chmod(root, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(tmp, buildFile), []byte(template.BuildID(rootfsTar)+"\n"), 0o644); err != nil {
		return err
	}
	final := filepath.Join(r.cfg.TemplatesDir, name)
	var old string
	if _, err := os.Lstat(final); err == nil {
		if old, err = os.MkdirTemp(r.cfg.TemplatesDir, ".old-"+name+"-"); err != nil {
			return err
		}
		old = filepath.Join(old, name)
		if err := os.Rename(final, old); err != nil {
			return fmt.Errorf("replace template %s: %w", name, err)
		}
		defer os.RemoveAll(filepath.Dir(old))
	}
	if err := os.Rename(tmp, final); err != nil {
		if old != "" {
			_ = os.Rename(old, final)
		}
		return fmt.Errorf("install template %s: %w", name, err)
	}
	return nil
}
