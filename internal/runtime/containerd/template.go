package containerd

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"hash"
	"io"
	"os"
	goruntime "runtime"
	"time"

	ctrd "github.com/containerd/containerd"
	"github.com/containerd/containerd/content"
	cerrdefs "github.com/containerd/containerd/errdefs"
	"github.com/containerd/containerd/images"
	"github.com/distribution/reference"
	"github.com/klauspost/compress/gzip"
	"github.com/opencontainers/go-digest"
	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/corral-sh/corral/internal/errdefs"
	"github.com/corral-sh/corral/internal/runtime"
	"github.com/corral-sh/corral/internal/template"
)

// ImageRef is the containerd image name of a template: the name normalized
// the way docker does it, so "corral-default" is
// "docker.io/library/corral-default:latest".
func ImageRef(template string) (string, error) {
	named, err := reference.ParseDockerRef(template)
	if err != nil {
		return "", errdefs.Invalidf("template %q is not a valid image name: %v", template, err)
	}
	return named.String(), nil
}

// LabelBuild, on a template image, names the build it was imported from.
const LabelBuild = "corral.template.build"

// TemplateBuild returns the build the template's image was imported from
// ("" if unknown); see template.Builds.
func (r *Runtime) TemplateBuild(ctx context.Context, tpl string) (string, error) {
	ref, err := ImageRef(tpl)
	if err != nil {
		return "", err
	}
	c, err := r.conn(ctx)
	if err != nil {
		return "", err
	}
	img, err := c.ImageService().Get(withNamespace(ctx), ref)
	if cerrdefs.IsNotFound(err) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("look up image %s: %w", ref, err)
	}
	return img.Labels[LabelBuild], nil
}

// HasTemplate reports whether the template's image is in containerd.
func (r *Runtime) HasTemplate(ctx context.Context, template string) (bool, error) {
	ref, err := ImageRef(template)
	if err != nil {
		return false, err
	}
	c, err := r.conn(ctx)
	if err != nil {
		return false, err
	}
	_, err = c.ImageService().Get(withNamespace(ctx), ref)
	if cerrdefs.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("look up image %s: %w", ref, err)
	}
	return true, nil
}

// image returns the template's image, unpacked for the snapshotter.
func (r *Runtime) image(ctx context.Context, c *ctrd.Client, template string) (ctrd.Image, error) {
	ref, err := ImageRef(template)
	if err != nil {
		return nil, err
	}
	img, err := c.GetImage(ctx, ref)
	if cerrdefs.IsNotFound(err) {
		return nil, errdefs.Unprocessablef("template %q (image %s) is not in containerd namespace %s; run `corral template build`", template, ref, Namespace)
	}
	if err != nil {
		return nil, fmt.Errorf("look up image %s: %w", ref, err)
	}
	ok, err := img.IsUnpacked(ctx, r.cfg.Snapshotter)
	if err != nil {
		return nil, fmt.Errorf("image %s: %w", ref, err)
	}
	if !ok {
		if err := img.Unpack(ctx, r.cfg.Snapshotter); err != nil {
			return nil, fmt.Errorf("unpack image %s: %w", ref, err)
		}
	}
	return img, nil
}

// ImportTemplate makes the root filesystem tar at rootfsTar the template
// named name: a one-layer OCI image (gzip layer; config with user
// 1000:1000, working directory /workspace, HOME /home/agent) written to the
// content store, recorded as the template's image (replacing an earlier
// one of that name) and unpacked for the snapshotter.
func (r *Runtime) ImportTemplate(ctx context.Context, rootfsTar, name string) error {
	ref, err := ImageRef(name)
	if err != nil {
		return err
	}
	c, err := r.conn(ctx)
	if err != nil {
		return err
	}
	ctx = withNamespace(ctx)
	// The lease keeps the blobs from being collected before the image
	// record refers to them.
	ctx, done, err := c.WithLease(ctx)
	if err != nil {
		return fmt.Errorf("containerd lease: %w", err)
	}
	defer done(context.WithoutCancel(ctx))

	cs := c.ContentStore()
	layer, diffID, err := writeLayer(ctx, cs, rootfsTar)
	if err != nil {
		return err
	}
	now := time.Now().UTC()
	cfg := ocispec.Image{
		Created:  &now,
		Platform: ocispec.Platform{Architecture: goruntime.GOARCH, OS: "linux"},
		Config: ocispec.ImageConfig{
			User:       fmt.Sprintf("%d:%d", runtime.AgentUID, runtime.AgentGID),
			WorkingDir: runtime.WorkspaceDir,
			Env: []string{
				"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
				"HOME=" + runtime.AgentHome,
			},
		},
		RootFS:  ocispec.RootFS{Type: "layers", DiffIDs: []digest.Digest{diffID}},
		History: []ocispec.History{{Created: &now, CreatedBy: "corral template import " + name}},
	}
	cfgDesc, err := writeJSON(ctx, cs, ocispec.MediaTypeImageConfig, cfg, nil)
	if err != nil {
		return err
	}
	manifest := ocispec.Manifest{
		Versioned: specs.Versioned{SchemaVersion: 2},
		MediaType: ocispec.MediaTypeImageManifest,
		Config:    cfgDesc,
		Layers:    []ocispec.Descriptor{layer},
	}
	// The gc labels tie the config and layer to the manifest, which the
	// image record keeps alive.
	mDesc, err := writeJSON(ctx, cs, ocispec.MediaTypeImageManifest, manifest, map[string]string{
		"containerd.io/gc.ref.content.config": cfgDesc.Digest.String(),
		"containerd.io/gc.ref.content.l.0":    layer.Digest.String(),
	})
	if err != nil {
		return err
	}
	rec := images.Image{Name: ref, Target: mDesc, Labels: map[string]string{LabelTemplate: name, LabelBuild: template.BuildID(rootfsTar)}}
	is := c.ImageService()
	if _, err := is.Create(ctx, rec); cerrdefs.IsAlreadyExists(err) {
		_, err = is.Update(ctx, rec, "target", "labels")
		if err != nil {
			return fmt.Errorf("update image %s: %w", ref, err)
		}
	} else if err != nil {
		return fmt.Errorf("create image %s: %w", ref, err)
	}
	if err := ctrd.NewImage(c, rec).Unpack(ctx, r.cfg.Snapshotter); err != nil {
		return fmt.Errorf("unpack image %s: %w", ref, err)
	}
	return nil
}

// writeLayer gzips the tar at path into the content store and returns the
// layer's descriptor and its diff id (the digest of the uncompressed tar).
// The compressed layer goes through a temporary file because the content
// store wants its size and digest up front.
func writeLayer(ctx context.Context, cs content.Store, path string) (ocispec.Descriptor, digest.Digest, error) {
	var none ocispec.Descriptor
	src, err := os.Open(path)
	if err != nil {
		return none, "", fmt.Errorf("rootfs tar: %w", err)
	}
	defer src.Close()
	tmp, err := os.CreateTemp("", "corral-layer-*.tar.gz")
	if err != nil {
		return none, "", fmt.Errorf("layer temp file: %w", err)
	}
	defer os.Remove(tmp.Name())
	defer tmp.Close()

	tarSum, gzSum := sha256.New(), sha256.New()
	gz, err := gzip.NewWriterLevel(io.MultiWriter(tmp, gzSum), gzip.BestSpeed)
	if err != nil {
		return none, "", err
	}
	if _, err := io.Copy(gz, io.TeeReader(src, tarSum)); err != nil {
		return none, "", fmt.Errorf("compress %s: %w", path, err)
	}
	if err := gz.Close(); err != nil {
		return none, "", fmt.Errorf("compress %s: %w", path, err)
	}
	size, err := tmp.Seek(0, io.SeekCurrent)
	if err != nil {
		return none, "", err
	}
	if _, err := tmp.Seek(0, io.SeekStart); err != nil {
		return none, "", err
	}
	diffID := sum(tarSum)
	desc := ocispec.Descriptor{MediaType: ocispec.MediaTypeImageLayerGzip, Digest: sum(gzSum), Size: size}
	err = content.WriteBlob(ctx, cs, "corral-layer-"+desc.Digest.Encoded(), tmp, desc,
		content.WithLabels(map[string]string{"containerd.io/uncompressed": diffID.String()}))
	if err != nil {
		return none, "", fmt.Errorf("write layer of %s: %w", path, err)
	}
	return desc, diffID, nil
}

// writeJSON stores v as a blob of the media type.
func writeJSON(ctx context.Context, cs content.Store, mediaType string, v any, labels map[string]string) (ocispec.Descriptor, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return ocispec.Descriptor{}, err
	}
	desc := ocispec.Descriptor{MediaType: mediaType, Digest: digest.FromBytes(b), Size: int64(len(b))}
	var opts []content.Opt
	if labels != nil {
		opts = append(opts, content.WithLabels(labels))
	}
	if err := content.WriteBlob(ctx, cs, "corral-"+desc.Digest.Encoded(), bytes.NewReader(b), desc, opts...); err != nil {
		return ocispec.Descriptor{}, fmt.Errorf("write %s: %w", mediaType, err)
	}
	return desc, nil
}

func sum(h hash.Hash) digest.Digest { return digest.NewDigest(digest.SHA256, h) }
