// Command image builds kubepact-controller's multi-architecture container
// image without a container engine or a registry, as an OCI image-layout
// archive, lists the platforms an archive holds, and reads a file back out of
// one platform's image. hack/image.sh and CI run it:
//
//	go run . build -version V -ref REF -out OUT.tar -binary amd64=FILE -binary arm64=FILE \
//		[-enrolment amd64=FILE -enrolment arm64=FILE] [-cli amd64=FILE -cli arm64=FILE]
//	go run . list -archive OUT.tar
//	go run . extract -archive OUT.tar -platform linux/arm64 -file /kubepact-controller -out FILE
//
// The archive's index.json names one OCI image index (REF), which holds one
// image per architecture. Each image is what the Dockerfile at the repository
// root builds: no base (scratch), one layer holding the static binary at
// /kubepact-controller, the entrypoint, and with -enrolment the enrolment
// endpoint's at /kubepact-enrolment (its Deployment names it as its
// command), with -cli the kubepact CLI at /kubepact (the chart's helm test
// hook names it as its command), run as 65532:65532. Every timestamp is the
// Unix epoch, so the same binaries always give the same digests.
//
// It is a module of its own, so that the library's users never inherit
// go-containerregistry.
package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/google/go-containerregistry/pkg/v1/validate"
)

// The image's fixed contents.
const (
	// Path is where the binary sits in the image, and its entrypoint.
	Path = "/kubepact-controller"
	// EnrolmentPath is where the enrolment endpoint's binary sits
	// (cmd/kubepact-enrolment), when the image holds it.
	EnrolmentPath = "/kubepact-enrolment"
	// CLIPath is where the kubepact CLI's binary sits (cmd/kubepact), when
	// the image holds it.
	CLIPath = "/kubepact"
	// User is the numeric user and group the binary runs as (distroless's
	// nonroot), so that Pods with runAsNonRoot need no runAsUser.
	User = "65532:65532"
	// Source and Licenses are the org.opencontainers.image labels.
	Source   = "https://github.com/kubepact/kubepact"
	Licenses = "Apache-2.0"

	// RefName is the index annotation that names an image in an OCI layout.
	RefName = "org.opencontainers.image.ref.name"
	// containerdName is the one containerd's import reads first.
	containerdName = "io.containerd.image.name"
)

// epoch is every timestamp in the image and the archive.
var epoch = time.Unix(0, 0).UTC()

// ErrSpec is returned by Index for a Spec it cannot build from: no binary,
// no version or name, an architecture Go does not name, or enrolment or CLI
// binaries for other architectures than the controller's.
var ErrSpec = errors.New("incomplete image spec")

// ErrLayout is returned for an archive whose index.json does not name one
// image index of platform images, the shape Index builds.
var ErrLayout = errors.New("not a kubepact-controller image layout")

// ErrNoPlatform is returned when the index holds no image for the platform
// asked for.
var ErrNoPlatform = errors.New("no image for the platform")

// Spec says what to build: one image per architecture, all under one name.
type Spec struct {
	Version  string            // org.opencontainers.image.version
	Ref      string            // the index's name and tag, e.g. ghcr.io/kubepact/kubepact-controller:v0.2.0
	Binaries map[string][]byte // the static linux binary for each GOARCH
	// Enrolment, when not empty, is kubepact-enrolment's static linux
	// binary for each GOARCH of Binaries, at EnrolmentPath.
	Enrolment map[string][]byte
	// CLI, when not empty, is the kubepact CLI's static linux binary for
	// each GOARCH of Binaries, at CLIPath.
	CLI map[string][]byte
}

// Index returns the OCI index an archive's index.json holds for s: one
// entry, named s.Ref in the RefName annotation, for an image index that lists
// one linux image per architecture of s.Binaries, in lexical order of the
// architecture, each with its platform.
func Index(s Spec) (v1.ImageIndex, error) {
	switch {
	case len(s.Binaries) == 0:
		return nil, fmt.Errorf("%w: no binary", ErrSpec)
	case s.Version == "", s.Ref == "":
		return nil, fmt.Errorf("%w: version and ref are required", ErrSpec)
	}
	if err := sameArches(s.Binaries, "enrolment", s.Enrolment); err != nil {
		return nil, err
	}
	if err := sameArches(s.Binaries, "CLI", s.CLI); err != nil {
		return nil, err
	}
	arches := make([]string, 0, len(s.Binaries))
	for arch := range s.Binaries {
		arches = append(arches, arch)
	}
	sort.Strings(arches)
	platforms := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, arch := range arches {
		files := []layerFile{{Path, s.Binaries[arch]}}
		if len(s.Enrolment) > 0 {
			files = append(files, layerFile{EnrolmentPath, s.Enrolment[arch]})
		}
		if len(s.CLI) > 0 {
			files = append(files, layerFile{CLIPath, s.CLI[arch]})
		}
		img, err := image(files, s.Version, arch)
		if err != nil {
			return nil, err
		}
		platforms = mutate.AppendManifests(platforms, mutate.IndexAddendum{
			Add:        img,
			Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: arch}},
		})
	}
	return mutate.AppendManifests(mutate.IndexMediaType(empty.Index, types.OCIImageIndex), mutate.IndexAddendum{
		Add:        platforms,
		Descriptor: v1.Descriptor{Annotations: map[string]string{RefName: s.Ref, containerdName: s.Ref}},
	}), nil
}

// sameArches checks that extra, the name binaries when not empty, holds
// one non-empty binary for each architecture of binaries and no other.
func sameArches(binaries map[string][]byte, name string, extra map[string][]byte) error {
	if len(extra) == 0 {
		return nil
	}
	for arch := range binaries {
		if len(extra[arch]) == 0 {
			return fmt.Errorf("%w: no %s binary for %q", ErrSpec, name, arch)
		}
	}
	for arch := range extra {
		if _, ok := binaries[arch]; !ok {
			return fmt.Errorf("%w: %s binary for %q, which has no controller binary", ErrSpec, name, arch)
		}
	}
	return nil
}

// layerFile is one binary of the image's layer.
type layerFile struct {
	path string
	bin  []byte
}

// image is the linux/arch image holding files, files[0] its entrypoint.
func image(files []layerFile, version, arch string) (v1.Image, error) {
	switch {
	case len(files[0].bin) == 0:
		return nil, fmt.Errorf("%w: no binary for %q", ErrSpec, arch)
	case arch == "" || strings.ContainsAny(arch, "/ \t"):
		return nil, fmt.Errorf("%w: architecture %q", ErrSpec, arch)
	}
	layer, err := binaryLayer(files)
	if err != nil {
		return nil, err
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.Append(img, mutate.Addendum{
		Layer:     layer,
		MediaType: types.OCILayer,
		History: v1.History{
			Created:   v1.Time{Time: epoch},
			CreatedBy: "hack/image.sh: COPY" + copied(files),
		},
	})
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.Created = v1.Time{Time: epoch}
	cf.OS = "linux"
	cf.Architecture = arch
	cf.Config.User = User
	cf.Config.Entrypoint = []string{Path}
	cf.Config.Labels = map[string]string{
		"org.opencontainers.image.version":  version,
		"org.opencontainers.image.source":   Source,
		"org.opencontainers.image.licenses": Licenses,
	}
	return mutate.ConfigFile(img, cf)
}

// copied is what the layer's history says it copied: each binary's name
// and path.
func copied(files []layerFile) string {
	var b strings.Builder
	for _, f := range files {
		fmt.Fprintf(&b, " %s %s", path.Base(f.path), f.path)
	}
	return b.String()
}

// binaryLayer is a gzipped tar holding each of files at its path, mode 0755,
// owned by root, in order.
func binaryLayer(files []layerFile) (v1.Layer, error) {
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for _, f := range files {
		if err := tw.WriteHeader(&tar.Header{
			Typeflag: tar.TypeReg,
			Name:     strings.TrimPrefix(f.path, "/"),
			Mode:     0o755,
			Size:     int64(len(f.bin)),
			ModTime:  epoch,
			Format:   tar.FormatPAX,
		}); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.bin); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	data := b.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(data)), nil
	}, tarball.WithMediaType(types.OCILayer), tarball.WithCompressionLevel(gzip.BestCompression), tarball.WithCompressedCaching)
}

// WriteArchive writes idx as an OCI image layout (oci-layout, index.json,
// blobs/) in a tar archive at out. It writes a temporary file beside out and
// renames it, so out is either the whole archive or untouched.
func WriteArchive(out string, idx v1.ImageIndex) (err error) {
	dir, err := os.MkdirTemp("", "kubepact-image-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if _, err := layout.Write(dir, idx); err != nil {
		return fmt.Errorf("OCI layout: %w", err)
	}
	f, err := os.CreateTemp(filepath.Dir(out), "."+filepath.Base(out)+".tmp-")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if err := tarDir(f, dir); err != nil {
		return err
	}
	if err := f.Chmod(0o644); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), out)
}

// tarDir writes the tree under dir to w in lexical order, with fixed
// owners, modes and times.
func tarDir(w io.Writer, dir string) error {
	tw := tar.NewWriter(w)
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		h := &tar.Header{Name: filepath.ToSlash(rel), ModTime: epoch, Format: tar.FormatPAX}
		if d.IsDir() {
			h.Typeflag, h.Name, h.Mode = tar.TypeDir, h.Name+"/", 0o755
			return tw.WriteHeader(h)
		}
		if !d.Type().IsRegular() {
			return fmt.Errorf("%s: not a regular file", rel)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		h.Typeflag, h.Mode, h.Size = tar.TypeReg, 0o644, int64(len(data))
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		_, err = tw.Write(data)
		return err
	})
	if err != nil {
		return err
	}
	return tw.Close()
}

// ReadArchive unpacks the OCI layout archive at archive into dir and
// returns its index, checked: every blob's digest and size, and every
// layer's diff ID, match what refers to it.
func ReadArchive(archive, dir string) (v1.ImageIndex, error) {
	f, err := os.Open(archive)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", archive, err)
		}
		name := path.Clean(strings.TrimPrefix(h.Name, "./"))
		if !filepath.IsLocal(name) {
			return nil, fmt.Errorf("%s: entry %q is outside the layout", archive, h.Name)
		}
		p := filepath.Join(dir, filepath.FromSlash(name))
		switch h.Typeflag {
		case tar.TypeDir:
			err = os.MkdirAll(p, 0o755)
		case tar.TypeReg:
			err = writeFile(p, tr, 0o644)
		default:
			err = fmt.Errorf("%s: entry %q is not a file or directory", archive, h.Name)
		}
		if err != nil {
			return nil, err
		}
	}
	idx, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", archive, err)
	}
	if err := validate.Index(idx); err != nil {
		return nil, fmt.Errorf("%s: %w", archive, err)
	}
	return idx, nil
}

func writeFile(p string, r io.Reader, mode fs.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, r); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// Named returns the one image index the archive's index idx names, and
// that name (its RefName annotation).
func Named(idx v1.ImageIndex) (v1.ImageIndex, string, error) {
	m, err := idx.IndexManifest()
	if err != nil {
		return nil, "", err
	}
	if len(m.Manifests) != 1 || !m.Manifests[0].MediaType.IsIndex() {
		return nil, "", fmt.Errorf("%w: index.json lists %d entries, want one image index", ErrLayout, len(m.Manifests))
	}
	named, err := idx.ImageIndex(m.Manifests[0].Digest)
	return named, m.Manifests[0].Annotations[RefName], err
}

// Platforms returns the descriptors of the images named holds, each with
// its platform, in the index's order.
func Platforms(named v1.ImageIndex) ([]v1.Descriptor, error) {
	m, err := named.IndexManifest()
	if err != nil {
		return nil, err
	}
	for _, d := range m.Manifests {
		if !d.MediaType.IsImage() || d.Platform == nil {
			return nil, fmt.Errorf("%w: %s is not an image with a platform", ErrLayout, d.Digest)
		}
	}
	return m.Manifests, nil
}

// ImageFor returns the image of platform p (os/arch, e.g. linux/arm64) in
// named, or ErrNoPlatform.
func ImageFor(named v1.ImageIndex, p string) (v1.Image, v1.Descriptor, error) {
	ds, err := Platforms(named)
	if err != nil {
		return nil, v1.Descriptor{}, err
	}
	for _, d := range ds {
		if d.Platform.String() == p {
			img, err := named.Image(d.Digest)
			return img, d, err
		}
	}
	return nil, v1.Descriptor{}, fmt.Errorf("%w: %s", ErrNoPlatform, p)
}

// File returns the content and header of the regular file at name in img's
// filesystem: its entry in the topmost layer that holds it.
func File(img v1.Image, name string) ([]byte, *tar.Header, error) {
	layers, err := img.Layers()
	if err != nil {
		return nil, nil, err
	}
	want := strings.TrimPrefix(path.Clean(name), "/")
	for i := len(layers) - 1; i >= 0; i-- {
		rc, err := layers[i].Uncompressed()
		if err != nil {
			return nil, nil, err
		}
		data, h, err := find(rc, want)
		rc.Close()
		if err != nil || h != nil {
			return data, h, err
		}
	}
	return nil, nil, fmt.Errorf("%s: %w", name, fs.ErrNotExist)
}

// find reads the tar stream r up to the entry named want.
func find(r io.Reader, want string) ([]byte, *tar.Header, error) {
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil, nil, nil
		}
		if err != nil {
			return nil, nil, err
		}
		if strings.TrimPrefix(path.Clean(h.Name), "/") != want {
			continue
		}
		if h.Typeflag != tar.TypeReg {
			return nil, nil, fmt.Errorf("%s: not a regular file", want)
		}
		data, err := io.ReadAll(tr)
		return data, h, err
	}
}

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) == 0 {
		return errors.New("usage: image build|list|extract [flags]")
	}
	flags := flag.NewFlagSet(args[0], flag.ContinueOnError)
	switch args[0] {
	case "build":
		s := Spec{Binaries: map[string][]byte{}, Enrolment: map[string][]byte{}, CLI: map[string][]byte{}}
		out := flags.String("out", "", "the OCI layout archive to write")
		flags.StringVar(&s.Version, "version", "", "the images' version label")
		flags.StringVar(&s.Ref, "ref", "", "the image index's name and tag")
		var binaries, enrolment, cli []string
		flags.Func("binary", "ARCH=FILE: the static linux binary built for GOARCH ARCH (repeat for each architecture)", func(v string) error {
			binaries = append(binaries, v)
			return nil
		})
		flags.Func("enrolment", "ARCH=FILE: kubepact-enrolment's static linux binary for GOARCH ARCH, at "+EnrolmentPath+" (repeat for each architecture)", func(v string) error {
			enrolment = append(enrolment, v)
			return nil
		})
		flags.Func("cli", "ARCH=FILE: the kubepact CLI's static linux binary for GOARCH ARCH, at "+CLIPath+" (repeat for each architecture)", func(v string) error {
			cli = append(cli, v)
			return nil
		})
		if err := flags.Parse(args[1:]); err != nil {
			return err
		}
		if err := readBinaries(s.Binaries, "binary", binaries); err != nil {
			return err
		}
		if err := readBinaries(s.Enrolment, "enrolment", enrolment); err != nil {
			return err
		}
		if err := readBinaries(s.CLI, "cli", cli); err != nil {
			return err
		}
		if *out == "" {
			return errors.New("build: -out is required")
		}
		idx, err := Index(s)
		if err != nil {
			return err
		}
		if err := WriteArchive(*out, idx); err != nil {
			return err
		}
		return describe(idx, *out)
	case "list":
		archive := flags.String("archive", "", "the OCI layout archive to read")
		if err := flags.Parse(args[1:]); err != nil {
			return err
		}
		if *archive == "" {
			return errors.New("list: -archive is required")
		}
		idx, cleanup, err := readArchive(*archive)
		if err != nil {
			return err
		}
		defer cleanup()
		return list(os.Stdout, idx)
	case "extract":
		archive := flags.String("archive", "", "the OCI layout archive to read")
		platform := flags.String("platform", "linux/"+runtime.GOARCH, "the image to read from, by its platform")
		file := flags.String("file", Path, "the file in the image")
		out := flags.String("out", "", "where to write it (with the image's mode bits)")
		if err := flags.Parse(args[1:]); err != nil {
			return err
		}
		if *archive == "" || *out == "" {
			return errors.New("extract: -archive and -out are required")
		}
		idx, cleanup, err := readArchive(*archive)
		if err != nil {
			return err
		}
		defer cleanup()
		named, _, err := Named(idx)
		if err != nil {
			return err
		}
		img, _, err := ImageFor(named, *platform)
		if err != nil {
			return err
		}
		data, h, err := File(img, *file)
		if err != nil {
			return err
		}
		return writeFile(*out, bytes.NewReader(data), fs.FileMode(h.Mode).Perm())
	default:
		return fmt.Errorf("unknown command %q: want build, list or extract", args[0])
	}
}

// readBinaries reads each ARCH=FILE of values, given as -flag, into m.
func readBinaries(m map[string][]byte, flag string, values []string) error {
	for _, v := range values {
		arch, file, ok := strings.Cut(v, "=")
		if !ok || arch == "" || file == "" {
			return fmt.Errorf("%w: -%s %q, want ARCH=FILE", ErrSpec, flag, v)
		}
		if _, dup := m[arch]; dup {
			return fmt.Errorf("%w: two -%s binaries for %s", ErrSpec, flag, arch)
		}
		bin, err := os.ReadFile(file)
		if err != nil {
			return err
		}
		m[arch] = bin
	}
	return nil
}

// list writes one line per image of the archive's index idx: its platform,
// then its manifest by name and digest (what a registry serves once the
// archive is pushed there).
func list(w io.Writer, idx v1.ImageIndex) error {
	named, ref, err := Named(idx)
	if err != nil {
		return err
	}
	ds, err := Platforms(named)
	if err != nil {
		return err
	}
	name := ref
	if i := strings.LastIndex(ref, ":"); i > strings.LastIndex(ref, "/") {
		name = ref[:i]
	}
	for _, d := range ds {
		if _, err := fmt.Fprintf(w, "%s %s@%s\n", d.Platform, name, d.Digest); err != nil {
			return err
		}
	}
	return nil
}

// describe prints what was written: the index's name and digest, then each
// platform's manifest digest and compressed layer size.
func describe(idx v1.ImageIndex, out string) error {
	named, ref, err := Named(idx)
	if err != nil {
		return err
	}
	digest, err := named.Digest()
	if err != nil {
		return err
	}
	ds, err := Platforms(named)
	if err != nil {
		return err
	}
	st, err := os.Stat(out)
	if err != nil {
		return err
	}
	fmt.Printf("%s (%d bytes)\n  index %s@%s\n", out, st.Size(), ref, digest)
	for _, d := range ds {
		img, err := named.Image(d.Digest)
		if err != nil {
			return err
		}
		layers, err := img.Layers()
		if err != nil {
			return err
		}
		var compressed int64
		for _, l := range layers {
			n, err := l.Size()
			if err != nil {
				return err
			}
			compressed += n
		}
		fmt.Printf("  %s %s, layers %d bytes compressed\n", d.Platform, d.Digest, compressed)
	}
	return nil
}

// readArchive reads the archive at path into a temporary directory, as
// ReadArchive does, and returns the function that removes it.
func readArchive(path string) (v1.ImageIndex, func(), error) {
	dir, err := os.MkdirTemp("", "kubepact-image-")
	if err != nil {
		return nil, nil, err
	}
	idx, err := ReadArchive(path, dir)
	if err != nil {
		os.RemoveAll(dir)
		return nil, nil, err
	}
	return idx, func() { os.RemoveAll(dir) }, nil
}
