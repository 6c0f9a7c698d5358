package version

import (
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCopyMatchesVERSION: the embedded copy is the repository's VERSION
// (run go generate ./internal/version after changing it).
func TestCopyMatchesVERSION(t *testing.T) {
	t.Parallel()
	root, err := os.ReadFile(filepath.Join("..", "..", "VERSION"))
	require.NoError(t, err)
	require.Equal(t, string(root), file, "internal/version/VERSION differs from VERSION: run go generate ./internal/version")
	require.Regexp(t, semverRE, File())
	require.True(t, isRelease(File()), "VERSION %q names a release", File())
}

// TestResolve: each source, and which wins.
func TestResolve(t *testing.T) {
	t.Parallel()
	const rev = "9d87c3ba008de7bf5973211f0e9604cd3d72c34b"
	vcs := func(modified bool) []debug.BuildSetting {
		m := "false"
		if modified {
			m = "true"
		}
		return []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: rev}, {Key: "vcs.modified", Value: m}}
	}
	info := func(main string, settings []debug.BuildSetting) *debug.BuildInfo {
		return &debug.BuildInfo{Main: debug.Module{Path: "github.com/kubepact/kubepact", Version: main}, Settings: settings}
	}
	for _, tc := range []struct {
		name   string
		linked string
		bi     *debug.BuildInfo
		want   string
	}{
		{"linked wins over everything", "v9.8.7", info("v0.2.0", vcs(true)), "v9.8.7"},
		{"linked is taken as it is", "v0.2.0-custom+build.1", info("(devel)", nil), "v0.2.0-custom+build.1"},
		{"go install of a release", "", info("v0.2.0", nil), "v0.2.0"},
		{"go install of a pre-release", "", info("v0.3.0-rc.1", nil), "v0.3.0-rc.1"},
		{"go build at a clean tag", "", info("v0.2.0", vcs(false)), "v0.2.0"},
		{"go build at a tag with changes", "", info("v0.2.0+dirty", vcs(true)), "v0.2.0-dev+9d87c3ba008d.dirty"},
		{"go build past a tag", "", info("v0.2.1-0.20261127171832-9d87c3ba008d", vcs(false)), "v0.2.0-dev+9d87c3ba008d"},
		{"go build with no tag, changes", "", info("v0.0.0-20261127171832-9d87c3ba008d+dirty", vcs(true)), "v0.2.0-dev+9d87c3ba008d.dirty"},
		{"go install of a commit (pseudo-version, no stamp)", "", info("v0.0.0-20261127171832-9d87c3ba008d", nil), "v0.2.0-dev+9d87c3ba008d"},
		{"go install of a commit past a pre-release", "", info("v0.3.0-rc.1.0.20261127171832-0123456789ab", nil), "v0.2.0-dev+0123456789ab"},
		{"VCS stamp alone", "", info("(devel)", vcs(false)), "v0.2.0-dev+9d87c3ba008d"},
		{"-buildvcs=false or a tarball", "", info("(devel)", nil), "v0.2.0-dev"},
		{"go test", "", info("", nil), "v0.2.0-dev"},
		{"no build information", "", nil, "v0.2.0-dev"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, tc.want, resolve(tc.linked, tc.bi, "v0.2.0"))
		})
	}
}

// TestNeverTheReleaseBetweenReleases: with nothing linked, only a recorded
// release version gives the bare release; every other recorded version
// gives a -dev version.
func TestNeverTheReleaseBetweenReleases(t *testing.T) {
	t.Parallel()
	for _, recorded := range []string{
		"", "(devel)", "v0.2.0+dirty", "v0.0.0-20261127171832-9d87c3ba008d", "v0.2.1-0.20261127171832-9d87c3ba008d",
		"v0.2.0-rc.1.0.20261127171832-9d87c3ba008d+dirty", "not a version", "v0.2", "0.2.0",
	} {
		got := resolve("", &debug.BuildInfo{Main: debug.Module{Version: recorded}}, "v0.2.0")
		assert.True(t, strings.HasPrefix(got, "v0.2.0-dev"), "recorded %q: %q", recorded, got)
		assert.Regexp(t, semverRE, got, "recorded %q", recorded)
	}
}
