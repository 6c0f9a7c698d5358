package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/types"
)

// TestArchive builds an image from a fake binary, writes the archive, and
// reads everything the Deployment and an importer rely on back out of it.
func TestArchive(t *testing.T) {
	bin := []byte("#!/bin/sh\necho not really kubepact-controller\n")
	spec := Spec{Binary: bin, Version: "v9.8.7", Arch: "arm64", Ref: "ghcr.io/kubepact/kubepact-controller:v9.8.7"}
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
		t.Errorf("index media type %s, want %s", mt, types.OCIImageIndex)
	}
	img, desc, err := OnlyImage(got)
	if err != nil {
		t.Fatal(err)
	}
	if desc.Annotations[RefName] != spec.Ref {
		t.Errorf("%s = %q, want %q", RefName, desc.Annotations[RefName], spec.Ref)
	}
	if desc.MediaType != types.OCIManifestSchema1 {
		t.Errorf("manifest media type %s, want %s", desc.MediaType, types.OCIManifestSchema1)
	}
	if desc.Platform == nil || desc.Platform.OS != "linux" || desc.Platform.Architecture != "arm64" {
		t.Errorf("platform %+v, want linux/arm64", desc.Platform)
	}

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
	if cf.OS != "linux" || cf.Architecture != "arm64" {
		t.Errorf("config platform %s/%s, want linux/arm64", cf.OS, cf.Architecture)
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
		t.Error("two builds of the same binary differ")
	}
}

// TestExtract runs the extract command as hack/image.sh's check does.
func TestExtract(t *testing.T) {
	idx, err := Index(Spec{Binary: []byte("fake"), Version: "v1.0.0", Arch: "amd64", Ref: "example.com/x:v1.0.0"})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	archive := filepath.Join(dir, "x.tar")
	if err := WriteArchive(archive, idx); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "bin", "kubepact-controller")
	if err := run([]string{"extract", "-archive", archive, "-out", out}); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(out)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm()&0o111 == 0 {
		t.Errorf("extracted mode %s, want executable", st.Mode())
	}
	if err := run([]string{"extract", "-archive", archive, "-file", "/etc/passwd", "-out", filepath.Join(dir, "passwd")}); err == nil {
		t.Error("extracting a file the image lacks succeeded")
	}
}

func TestIndexRejects(t *testing.T) {
	for name, s := range map[string]Spec{
		"no binary":  {Version: "v1", Arch: "amd64", Ref: "x:v1"},
		"no version": {Binary: []byte("x"), Arch: "amd64", Ref: "x:v1"},
		"no arch":    {Binary: []byte("x"), Version: "v1", Ref: "x:v1"},
		"no ref":     {Binary: []byte("x"), Version: "v1", Arch: "amd64"},
	} {
		if _, err := Index(s); err == nil {
			t.Errorf("%s: Index succeeded", name)
		}
	}
}
