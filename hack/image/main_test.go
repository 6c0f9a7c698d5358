package main

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// TestArchive builds a two-architecture image from fake binaries, writes
// the archive, and reads everything the Deployment and an importer rely on
// back out of it, for each platform.
func TestArchive(t *testing.T) {
	bins := map[string][]byte{
		"amd64": []byte("#!/bin/sh\necho not really kubepact-controller for amd64\n"),
		"arm64": []byte("#!/bin/sh\necho not really kubepact-controller for arm64\n"),
	}
	spec := Spec{Binaries: bins, Version: "v9.8.7", Ref: "ghcr.io/kubepact/kubepact-controller:v9.8.7"}
	idx, err := Index(spec)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	out := filepath.Join(dir, "image.tar")
	if err := WriteArchive(out, idx); err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("%s holds %d entries, want the archive alone", dir, len(entries))
	}

	got, err := ReadArchive(out, t.TempDir()) // validates digests, sizes, diff IDs
	if err != nil {
		t.Fatal(err)
	}
	if mt, _ := got.MediaType(); mt != types.OCIImageIndex {
		t.Errorf("index.json media type %s, want %s", mt, types.OCIImageIndex)
	}
	// index.json names one image index, as skopeo copy --all, crane push and
	// ctr import read it.
	m, err := got.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Manifests) != 1 || m.Manifests[0].MediaType != types.OCIImageIndex {
		t.Fatalf("index.json lists %+v, want one image index", m.Manifests)
	}
	for _, k := range []string{RefName, containerdName} {
		if m.Manifests[0].Annotations[k] != spec.Ref {
			t.Errorf("%s = %q, want %q", k, m.Manifests[0].Annotations[k], spec.Ref)
		}
	}
	named, ref, err := Named(got)
	if err != nil {
		t.Fatal(err)
	}
	if ref != spec.Ref {
		t.Errorf("name %q, want %q", ref, spec.Ref)
	}
	ds, err := Platforms(named)
	if err != nil {
		t.Fatal(err)
	}
	var platforms []string
	for _, d := range ds {
		platforms = append(platforms, d.Platform.String())
		if d.MediaType != types.OCIManifestSchema1 {
			t.Errorf("%s: manifest media type %s, want %s", d.Platform, d.MediaType, types.OCIManifestSchema1)
		}
	}
	if strings.Join(platforms, " ") != "linux/amd64 linux/arm64" {
		t.Errorf("platforms %q, want linux/amd64 linux/arm64", platforms)
	}
	for _, arch := range []string{"amd64", "arm64"} {
		img, _, err := ImageFor(named, "linux/"+arch)
		if err != nil {
			t.Fatal(err)
		}
		checkImage(t, img, arch, bins[arch])
	}

	// The same input gives the same bytes.
	again := filepath.Join(t.TempDir(), "again.tar")
	idx2, err := Index(spec)
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteArchive(again, idx2); err != nil {
		t.Fatal(err)
	}
	a, _ := os.ReadFile(out)
	b, _ := os.ReadFile(again)
	if string(a) != string(b) {
		t.Error("two builds of the same binaries differ")
	}
}

// checkImage checks the linux/arch image img: bin at /kubepact-controller,
// and the configuration the Deployment relies on.
func checkImage(t *testing.T, img v1.Image, arch string, bin []byte) {
	t.Helper()
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	if len(layers) != 1 {
		t.Fatalf("%d layers, want 1", len(layers))
	}
	if mt, _ := layers[0].MediaType(); mt != types.OCILayer {
		t.Errorf("layer media type %s, want %s", mt, types.OCILayer)
	}
	data, h, err := File(img, "/kubepact-controller")
	if err != nil {
		t.Fatal(err)
	}
	if string(data) != string(bin) {
		t.Errorf("/kubepact-controller holds %q, want the binary", data)
	}
	if h.Mode != 0o755 || h.Uid != 0 || h.Gid != 0 || !h.ModTime.Equal(epoch) {
		t.Errorf("/kubepact-controller: mode %o, owner %d:%d, time %s; want 755, 0:0, the epoch", h.Mode, h.Uid, h.Gid, h.ModTime)
	}

	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.Config.User != "65532:65532" {
		t.Errorf("user %q, want 65532:65532", cf.Config.User)
	}
	if len(cf.Config.Entrypoint) != 1 || cf.Config.Entrypoint[0] != "/kubepact-controller" || len(cf.Config.Cmd) != 0 {
		t.Errorf("entrypoint %q, cmd %q; want [/kubepact-controller], none", cf.Config.Entrypoint, cf.Config.Cmd)
	}
	if cf.OS != "linux" || cf.Architecture != arch {
		t.Errorf("config platform %s/%s, want linux/%s", cf.OS, cf.Architecture, arch)
	}
	for k, want := range map[string]string{
		"org.opencontainers.image.version":  "v9.8.7",
		"org.opencontainers.image.source":   "https://github.com/kubepact/kubepact",
		"org.opencontainers.image.licenses": "Apache-2.0",
	} {
		if cf.Config.Labels[k] != want {
			t.Errorf("label %s = %q, want %q", k, cf.Config.Labels[k], want)
		}
	}
	if !cf.Created.Equal(epoch) {
		t.Errorf("created %s, want the epoch", cf.Created)
	}
}

// TestExtractAndList runs the list and extract commands as CI does: each
// platform's binary comes out of its own image, and a platform the archive
// lacks is refused with ErrNoPlatform.
func TestExtractAndList(t *testing.T) {
	dir := t.TempDir()
	for _, arch := range []string{"amd64", "arm64"} {
		if err := os.WriteFile(filepath.Join(dir, arch), []byte("fake "+arch), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	archive := filepath.Join(dir, "x.tar")
	if err := run([]string{"build", "-version", "v1.0.0", "-ref", "example.com:5000/x:v1.0.0", "-out", archive,
		"-binary", "arm64=" + filepath.Join(dir, "arm64"), "-binary", "amd64=" + filepath.Join(dir, "amd64")}); err != nil {
		t.Fatal(err)
	}

	got, err := ReadArchive(archive, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var listed bytes.Buffer
	if err := list(&listed, got); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(listed.String(), "\n"), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "linux/amd64 example.com:5000/x@sha256:") || !strings.HasPrefix(lines[1], "linux/arm64 example.com:5000/x@sha256:") {
		t.Errorf("list printed %q, want linux/amd64 and linux/arm64 with their manifests", lines)
	}
	if err := run([]string{"list", "-archive", archive}); err != nil {
		t.Error(err)
	}

	for _, arch := range []string{"amd64", "arm64"} {
		out := filepath.Join(dir, "bin", arch)
		if err := run([]string{"extract", "-archive", archive, "-platform", "linux/" + arch, "-out", out}); err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		if string(data) != "fake "+arch {
			t.Errorf("linux/%s: extracted %q, want that platform's binary", arch, data)
		}
		if st, _ := os.Stat(out); st.Mode().Perm()&0o111 == 0 {
			t.Errorf("extracted mode %s, want executable", st.Mode())
		}
	}
	err = run([]string{"extract", "-archive", archive, "-platform", "linux/s390x", "-out", filepath.Join(dir, "s390x")})
	if !errors.Is(err, ErrNoPlatform) {
		t.Errorf("extracting linux/s390x: %v, want ErrNoPlatform", err)
	}
	if err := run([]string{"extract", "-archive", archive, "-file", "/etc/passwd", "-out", filepath.Join(dir, "passwd")}); err == nil {
		t.Error("extracting a file the image lacks succeeded")
	}
}

// TestNamedRejects: an archive whose index.json lists images directly, not
// one named index of them, is not read as a multi-architecture image.
func TestNamedRejects(t *testing.T) {
	idx, err := Index(Spec{Binaries: map[string][]byte{"amd64": []byte("x")}, Version: "v1", Ref: "x:v1"})
	if err != nil {
		t.Fatal(err)
	}
	named, _, err := Named(idx)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := Named(named); !errors.Is(err, ErrLayout) {
		t.Errorf("Named of an index of images: %v, want ErrLayout", err)
	}
	if _, err := Platforms(idx); !errors.Is(err, ErrLayout) {
		t.Errorf("Platforms of index.json: %v, want ErrLayout", err)
	}
}

func TestIndexRejects(t *testing.T) {
	for name, s := range map[string]Spec{
		"no binary":       {Version: "v1", Ref: "x:v1"},
		"empty binary":    {Binaries: map[string][]byte{"amd64": nil}, Version: "v1", Ref: "x:v1"},
		"no version":      {Binaries: map[string][]byte{"amd64": []byte("x")}, Ref: "x:v1"},
		"no arch":         {Binaries: map[string][]byte{"": []byte("x")}, Version: "v1", Ref: "x:v1"},
		"arch with slash": {Binaries: map[string][]byte{"linux/amd64": []byte("x")}, Version: "v1", Ref: "x:v1"},
		"no ref":          {Binaries: map[string][]byte{"amd64": []byte("x")}, Version: "v1"},
	} {
		if _, err := Index(s); !errors.Is(err, ErrSpec) {
			t.Errorf("%s: Index: %v, want ErrSpec", name, err)
		}
	}
	dir := t.TempDir()
	f := filepath.Join(dir, "bin")
	if err := os.WriteFile(f, []byte("x"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, bin := range [][]string{{"amd64"}, {"=" + f}, {"amd64="}, {"amd64=" + f, "amd64=" + f}} {
		args := []string{"build", "-out", filepath.Join(dir, "x.tar"), "-version", "v1", "-ref", "x:v1"}
		for _, b := range bin {
			args = append(args, "-binary", b)
		}
		if err := run(args); !errors.Is(err, ErrSpec) {
			t.Errorf("build -binary %q: %v, want ErrSpec", bin, err)
		}
	}
}

// TestArchiveWithEnrolment: with -enrolment, each platform's image holds
// kubepact-enrolment at /kubepact-enrolment beside the controller, in the
// same layer, and is otherwise the controller's image; the controller
// stays the entrypoint.
func TestArchiveWithEnrolment(t *testing.T) {
	dir := t.TempDir()
	var args []string
	for _, arch := range []string{"amd64", "arm64"} {
		for _, name := range []string{"controller", "enrolment"} {
			f := filepath.Join(dir, name+"-"+arch)
			if err := os.WriteFile(f, []byte("fake "+name+" "+arch), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		args = append(args, "-binary", arch+"="+filepath.Join(dir, "controller-"+arch), "-enrolment", arch+"="+filepath.Join(dir, "enrolment-"+arch))
	}
	archive := filepath.Join(dir, "x.tar")
	if err := run(append([]string{"build", "-version", "v9.8.7", "-ref", "ghcr.io/kubepact/kubepact-controller:v9.8.7", "-out", archive}, args...)); err != nil {
		t.Fatal(err)
	}
	idx, err := ReadArchive(archive, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	named, _, err := Named(idx)
	if err != nil {
		t.Fatal(err)
	}
	for _, arch := range []string{"amd64", "arm64"} {
		img, _, err := ImageFor(named, "linux/"+arch)
		if err != nil {
			t.Fatal(err)
		}
		checkImage(t, img, arch, []byte("fake controller "+arch))
		data, h, err := File(img, EnrolmentPath)
		if err != nil {
			t.Fatal(err)
		}
		if string(data) != "fake enrolment "+arch {
			t.Errorf("linux/%s: %s holds %q, want the enrolment binary", arch, EnrolmentPath, data)
		}
		if h.Mode != 0o755 || h.Uid != 0 || h.Gid != 0 || !h.ModTime.Equal(epoch) {
			t.Errorf("%s: mode %o, owner %d:%d, time %s; want 755, 0:0, the epoch", EnrolmentPath, h.Mode, h.Uid, h.Gid, h.ModTime)
		}

		out := filepath.Join(dir, "extracted-"+arch)
		if err := run([]string{"extract", "-archive", archive, "-platform", "linux/" + arch, "-file", EnrolmentPath, "-out", out}); err != nil {
			t.Fatal(err)
		}
		if got, _ := os.ReadFile(out); string(got) != "fake enrolment "+arch {
			t.Errorf("extract -file %s: %q", EnrolmentPath, got)
		}
	}

	// Without -enrolment the image is the controller's alone, as before:
	// adding the option changed no digest of an image without it.
	plain, err := Index(Spec{Binaries: map[string][]byte{"amd64": []byte("x")}, Version: "v1", Ref: "x:v1"})
	if err != nil {
		t.Fatal(err)
	}
	pn, _, err := Named(plain)
	if err != nil {
		t.Fatal(err)
	}
	img, _, err := ImageFor(pn, "linux/amd64")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := File(img, EnrolmentPath); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("%s in an image built without it: %v", EnrolmentPath, err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if want := "hack/image.sh: COPY kubepact-controller /kubepact-controller"; cf.History[0].CreatedBy != want {
		t.Errorf("history %q, want %q", cf.History[0].CreatedBy, want)
	}
}

func TestIndexRejectsEnrolment(t *testing.T) {
	bins := map[string][]byte{"amd64": []byte("x"), "arm64": []byte("y")}
	for name, enrolment := range map[string]map[string][]byte{
		"one architecture missing": {"amd64": []byte("e")},
		"an empty binary":          {"amd64": []byte("e"), "arm64": nil},
		"an extra architecture":    {"amd64": []byte("e"), "arm64": []byte("e"), "riscv64": []byte("e")},
	} {
		if _, err := Index(Spec{Binaries: bins, Enrolment: enrolment, Version: "v1", Ref: "x:v1"}); !errors.Is(err, ErrSpec) {
			t.Errorf("%s: Index: %v, want ErrSpec", name, err)
		}
	}
	dir := t.TempDir()
	f := filepath.Join(dir, "bin")
	if err := os.WriteFile(f, []byte("x"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, e := range [][]string{{"amd64"}, {"=" + f}, {"amd64=" + f, "amd64=" + f}} {
		args := []string{"build", "-out", filepath.Join(dir, "x.tar"), "-version", "v1", "-ref", "x:v1", "-binary", "amd64=" + f}
		for _, v := range e {
			args = append(args, "-enrolment", v)
		}
		if err := run(args); !errors.Is(err, ErrSpec) {
			t.Errorf("build -enrolment %q: %v, want ErrSpec", e, err)
		}
	}
}

// TestArchiveWithCLI: with -cli, each platform's image holds the kubepact
// CLI at /kubepact beside the controller and the enrolment endpoint, in the
// same layer, after them; the controller stays the entrypoint. With -cli
// alone, the image holds the controller and the CLI.
func TestArchiveWithCLI(t *testing.T) {
	for name, tc := range map[string]struct {
		binaries []string // besides the controller's
		paths    []string // the layer's files, in order
		history  string
	}{
		"with the enrolment endpoint": {[]string{"enrolment", "cli"}, []string{Path, EnrolmentPath, CLIPath},
			"hack/image.sh: COPY kubepact-controller /kubepact-controller kubepact-enrolment /kubepact-enrolment kubepact /kubepact"},
		"alone": {[]string{"cli"}, []string{Path, CLIPath},
			"hack/image.sh: COPY kubepact-controller /kubepact-controller kubepact /kubepact"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			var args []string
			for _, arch := range []string{"amd64", "arm64"} {
				for _, bin := range append([]string{"binary"}, tc.binaries...) {
					f := filepath.Join(dir, bin+"-"+arch)
					if err := os.WriteFile(f, []byte("fake "+bin+" "+arch), 0o755); err != nil {
						t.Fatal(err)
					}
					args = append(args, "-"+bin, arch+"="+f)
				}
			}
			archive := filepath.Join(dir, "x.tar")
			if err := run(append([]string{"build", "-version", "v9.8.7", "-ref", "ghcr.io/kubepact/kubepact-controller:v9.8.7", "-out", archive}, args...)); err != nil {
				t.Fatal(err)
			}
			idx, err := ReadArchive(archive, t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			named, _, err := Named(idx)
			if err != nil {
				t.Fatal(err)
			}
			for _, arch := range []string{"amd64", "arm64"} {
				img, _, err := ImageFor(named, "linux/"+arch)
				if err != nil {
					t.Fatal(err)
				}
				checkImage(t, img, arch, []byte("fake binary "+arch))
				if got := layerPaths(t, img); strings.Join(got, " ") != strings.Join(tc.paths, " ") {
					t.Errorf("linux/%s: the layer holds %q, want %q", arch, got, tc.paths)
				}
				data, h, err := File(img, CLIPath)
				if err != nil {
					t.Fatal(err)
				}
				if string(data) != "fake cli "+arch {
					t.Errorf("linux/%s: %s holds %q, want the CLI binary", arch, CLIPath, data)
				}
				if h.Mode != 0o755 || h.Uid != 0 || h.Gid != 0 || !h.ModTime.Equal(epoch) {
					t.Errorf("%s: mode %o, owner %d:%d, time %s; want 755, 0:0, the epoch", CLIPath, h.Mode, h.Uid, h.Gid, h.ModTime)
				}
				cf, err := img.ConfigFile()
				if err != nil {
					t.Fatal(err)
				}
				if cf.History[0].CreatedBy != tc.history {
					t.Errorf("linux/%s: history %q, want %q", arch, cf.History[0].CreatedBy, tc.history)
				}

				out := filepath.Join(dir, "extracted-"+arch)
				if err := run([]string{"extract", "-archive", archive, "-platform", "linux/" + arch, "-file", CLIPath, "-out", out}); err != nil {
					t.Fatal(err)
				}
				if got, _ := os.ReadFile(out); string(got) != "fake cli "+arch {
					t.Errorf("extract -file %s: %q", CLIPath, got)
				}
				if st, _ := os.Stat(out); st.Mode().Perm()&0o111 == 0 {
					t.Errorf("extracted %s: mode %s, want executable", CLIPath, st.Mode())
				}
			}
		})
	}

	// Without -cli the image holds no /kubepact, and its digest is the one
	// it had before the option: the same spec with an empty CLI map.
	spec := Spec{Binaries: map[string][]byte{"amd64": []byte("x")}, Enrolment: map[string][]byte{"amd64": []byte("e")}, Version: "v1", Ref: "x:v1"}
	plain, err := Index(spec)
	if err != nil {
		t.Fatal(err)
	}
	pn, _, err := Named(plain)
	if err != nil {
		t.Fatal(err)
	}
	img, _, err := ImageFor(pn, "linux/amd64")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := File(img, CLIPath); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("%s in an image built without it: %v", CLIPath, err)
	}
	if got := layerPaths(t, img); strings.Join(got, " ") != Path+" "+EnrolmentPath {
		t.Errorf("an image built without the CLI holds %q", got)
	}
	spec.CLI = map[string][]byte{}
	again, err := Index(spec)
	if err != nil {
		t.Fatal(err)
	}
	d1, _ := plain.Digest()
	d2, _ := again.Digest()
	if d1 != d2 {
		t.Errorf("an empty CLI map changed the index's digest: %s, %s", d1, d2)
	}
}

// layerPaths lists the paths of img's one layer, in order.
func layerPaths(t *testing.T, img v1.Image) []string {
	t.Helper()
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	var paths []string
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return paths
		}
		if err != nil {
			t.Fatal(err)
		}
		paths = append(paths, "/"+h.Name)
	}
}

func TestIndexRejectsCLI(t *testing.T) {
	bins := map[string][]byte{"amd64": []byte("x"), "arm64": []byte("y")}
	for name, cli := range map[string]map[string][]byte{
		"one architecture missing": {"amd64": []byte("c")},
		"an empty binary":          {"amd64": []byte("c"), "arm64": nil},
		"an extra architecture":    {"amd64": []byte("c"), "arm64": []byte("c"), "riscv64": []byte("c")},
	} {
		_, err := Index(Spec{Binaries: bins, CLI: cli, Version: "v1", Ref: "x:v1"})
		if !errors.Is(err, ErrSpec) || !strings.Contains(err.Error(), "CLI binary") {
			t.Errorf("%s: Index: %v, want ErrSpec about the CLI binary", name, err)
		}
	}
	// The CLI's architectures are checked against the controller's, not the
	// enrolment endpoint's.
	if _, err := Index(Spec{Binaries: bins, Enrolment: bins, CLI: map[string][]byte{"amd64": []byte("c")}, Version: "v1", Ref: "x:v1"}); !errors.Is(err, ErrSpec) {
		t.Errorf("a CLI for one of two architectures beside a full enrolment: %v, want ErrSpec", err)
	}
	dir := t.TempDir()
	f := filepath.Join(dir, "bin")
	if err := os.WriteFile(f, []byte("x"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range [][]string{{"amd64"}, {"=" + f}, {"amd64="}, {"amd64=" + f, "amd64=" + f}, {"arm64=" + f}} {
		args := []string{"build", "-out", filepath.Join(dir, "x.tar"), "-version", "v1", "-ref", "x:v1", "-binary", "amd64=" + f}
		for _, v := range c {
			args = append(args, "-cli", v)
		}
		if err := run(args); !errors.Is(err, ErrSpec) {
			t.Errorf("build -cli %q: %v, want ErrSpec", c, err)
		}
	}
	if err := run([]string{"build", "-out", filepath.Join(dir, "x.tar"), "-version", "v1", "-ref", "x:v1", "-binary", "amd64=" + f, "-cli", "amd64=" + filepath.Join(dir, "missing")}); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("build -cli with a missing file: %v, want fs.ErrNotExist", err)
	}
}
