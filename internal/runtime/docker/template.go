package docker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/distribution/reference"
	"github.com/moby/moby/client"

	"github.com/corral-sh/corral/internal/errdefs"
	"github.com/corral-sh/corral/internal/runtime"
	"github.com/corral-sh/corral/internal/template"
)

// templateChanges are the image settings of an imported template: the
// agent user, its home, and the workspace as working directory.
var templateChanges = []string{
	fmt.Sprintf("USER %d:%d", runtime.AgentUID, runtime.AgentGID),
	"WORKDIR " + runtime.WorkspaceDir,
	"ENV HOME=" + runtime.AgentHome,
}

// ImportTemplate makes a template image from a root filesystem tarball
// (uncompressed or compressed; the engine detects which) and tags it name,
// with ":latest" added when name has no tag. An existing image of that name
// is re-tagged to the new one.
func (r *Runtime) ImportTemplate(ctx context.Context, rootfsTar string, name string) error {
	ref, err := imageRef(name)
	if err != nil {
		return err
	}
	f, err := os.Open(rootfsTar)
	if err != nil {
		return fmt.Errorf("docker: import template %s: %w", ref, err)
	}
	defer f.Close()
	changes := append(slices.Clone(templateChanges), "LABEL "+LabelBuild+"="+template.BuildID(rootfsTar))
	rc, err := r.cli.ImageImport(ctx, client.ImageImportSource{Source: f, SourceName: "-"}, ref,
		client.ImageImportOptions{Changes: changes, Message: "corral template from " + rootfsTar})
	if err != nil {
		return engineErr(err, "docker: import template %s", ref)
	}
	defer rc.Close()
	if err := importResult(rc); err != nil {
		return fmt.Errorf("docker: import template %s from %s: %w", ref, rootfsTar, err)
	}
	return nil
}

// importResult reads the engine's progress messages to the end and
// returns the error one of them reports.
func importResult(r io.Reader) error {
	dec := json.NewDecoder(r)
	for {
		var msg struct {
			Error       string `json:"error"`
			ErrorDetail *struct {
				Message string `json:"message"`
			} `json:"errorDetail"`
		}
		err := dec.Decode(&msg)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read engine response: %w", err)
		}
		if msg.ErrorDetail != nil && msg.ErrorDetail.Message != "" {
			return errors.New(msg.ErrorDetail.Message)
		}
		if msg.Error != "" {
			return errors.New(msg.Error)
		}
	}
}

// LabelBuild, on a template image, names the build it was imported from.
const LabelBuild = "corral.template.build"

// TemplateBuild returns the build the image name was imported from (""
// if unknown); see template.Builds.
func (r *Runtime) TemplateBuild(ctx context.Context, name string) (string, error) {
	ref, err := imageRef(name)
	if err != nil {
		return "", err
	}
	img, err := r.cli.ImageInspect(ctx, ref)
	if err != nil {
		if cerrdefs.IsNotFound(err) {
			return "", nil
		}
		return "", engineErr(err, "docker: inspect template %s", ref)
	}
	if img.Config == nil {
		return "", nil
	}
	return img.Config.Labels[LabelBuild], nil
}

// HasTemplate reports whether the engine has the image name.
func (r *Runtime) HasTemplate(ctx context.Context, name string) (bool, error) {
	ref, err := imageRef(name)
	if err != nil {
		return false, err
	}
	if _, err := r.cli.ImageInspect(ctx, ref); err != nil {
		if cerrdefs.IsNotFound(err) {
			return false, nil
		}
		return false, engineErr(err, "docker: inspect template %s", ref)
	}
	return true, nil
}

// imageRef returns name as a tagged image reference in its familiar form
// ("corral-default" becomes "corral-default:latest").
func imageRef(name string) (string, error) {
	named, err := reference.ParseNormalizedNamed(name)
	if err != nil {
		return "", errdefs.Invalidf("template name %q: %v", name, err)
	}
	if _, ok := named.(reference.Digested); ok {
		return "", errdefs.Invalidf("template name %q: want a name or name:tag, not a digest", name)
	}
	return reference.FamiliarString(reference.TagNameOnly(named)), nil
}
