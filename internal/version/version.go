// Package version tells which version of kubepact a binary is. The kubepact
// CLI and kubepact-controller both ask it, so their --version, the
// controller's kubepact_build_info metric and the image's label say the same.
//
// # Which source wins
//
// The first of these that gives a version is the binary's version:
//
//  1. The version set at link time, main.version:
//     go build -ldflags "-X main.version=v0.2.0". Whoever sets it vouches
//     for it, and it is taken as it is. Release builds set it to VERSION:
//     hack/image.sh and the Dockerfile do.
//  2. The main module's version the go command recorded, when it is a
//     release (vX.Y.Z or vX.Y.Z-PRE, neither a pseudo-version nor
//     "+dirty"): go install github.com/kubepact/kubepact/cmd/kubepact@v0.2.0,
//     or go build in a clean checkout of the tag v0.2.0 (Go 1.24 and later
//     stamp the tag).
//  3. Otherwise the binary was built between releases, and says so:
//     VERSION, as the source it was built from holds it, with "-dev", and,
//     when the build recorded one, the revision as build metadata (its first
//     12 hexadecimal digits, from the VCS stamp or from the pseudo-version
//     go install recorded), with ".dirty" when the checkout had changes:
//     v0.2.0-dev+9d87c3ba008d, v0.2.0-dev+9d87c3ba008d.dirty. A build with
//     no stamp (go build -buildvcs=false, or from a source tarball, which has
//     no .git) is v0.2.0-dev.
//
// So a binary that says v0.2.0 was linked as v0.2.0 or built from the tag
// v0.2.0, and one built from any other source says -dev: in semantic
// versioning's order a pre-release sorts before the release, so a
// "-dev" build never passes for the release in a version comparison.
//
// The package embeds a copy of the repository's VERSION file (go:embed
// cannot reach a parent directory); go generate refreshes it, and a test
// fails when the two differ.
package version

//go:generate cp ../../VERSION VERSION

import (
	_ "embed"
	"regexp"
	"runtime/debug"
	"strings"
)

//go:embed VERSION
var file string

// File returns the version VERSION holds: the release the source is, or
// the last release it follows.
func File() string { return strings.TrimSpace(file) }

// Get returns the version of the running binary, linked being its
// main.version (empty when the build did not set it).
func Get(linked string) string {
	bi, _ := debug.ReadBuildInfo()
	return Resolve(linked, bi)
}

// Resolve returns the version of a binary whose main.version is linked and
// whose build information is bi (nil when there is none), in the order the
// package doc gives.
func Resolve(linked string, bi *debug.BuildInfo) string {
	return resolve(linked, bi, File())
}

// devSuffix marks a build between releases.
const devSuffix = "-dev"

func resolve(linked string, bi *debug.BuildInfo, file string) string {
	if linked != "" {
		return linked
	}
	var recorded, revision string
	var dirty bool
	if bi != nil {
		recorded = bi.Main.Version
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				revision = s.Value
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
	}
	if isRelease(recorded) {
		return recorded
	}
	if revision == "" {
		revision = pseudoRevision(recorded)
	}
	if strings.HasSuffix(recorded, "+dirty") {
		dirty = true
	}
	v := file + devSuffix
	var meta []string
	if revision != "" {
		meta = append(meta, shortRevision(revision))
	}
	if dirty {
		meta = append(meta, "dirty")
	}
	if len(meta) > 0 {
		v += "+" + strings.Join(meta, ".")
	}
	return v
}

// semverRE matches a semantic version with a v: major, minor, patch, an
// optional pre-release and optional build metadata.
var semverRE = regexp.MustCompile(`^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?(\+[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?$`)

// pseudoRE matches the go command's pseudo-versions (go.dev/ref/mod,
// "Pseudo-versions"): vX.0.0-TIMESTAMP-REVISION, vX.Y.Z-PRE.0.TIMESTAMP-REVISION
// and vX.Y.Z-0.TIMESTAMP-REVISION, the revision in the last group.
var pseudoRE = regexp.MustCompile(`^v[0-9]+\.(0\.0-|[0-9]+\.[0-9]+-([^+]*\.)?0\.)[0-9]{14}-([0-9A-Za-z]+)(\+[0-9A-Za-z.-]+)?$`)

// isRelease reports a recorded module version that names a release: a
// semantic version with no build metadata (the go command adds "+dirty"
// for a checkout with changes) that is not a pseudo-version.
func isRelease(v string) bool {
	return semverRE.MatchString(v) && !strings.Contains(v, "+") && !pseudoRE.MatchString(v)
}

// pseudoRevision returns the revision a pseudo-version names, "" for any
// other version.
func pseudoRevision(v string) string {
	m := pseudoRE.FindStringSubmatch(v)
	if m == nil {
		return ""
	}
	return m[3]
}

// shortRevision returns the first 12 characters of a revision, as
// pseudo-versions and git's abbreviations show it.
func shortRevision(r string) string {
	if len(r) > 12 {
		return r[:12]
	}
	return r
}

// The annotations of kubepact-controller's leader election Lease in which
// the controller that holds it tells its version. The holder writes both in
// each write of the Lease (acquiring, renewing, releasing), so they change
// hands with the Lease; the version is the holder's only while
// LeaseHolderAnnotation equals the Lease's spec.holderIdentity (a holder of
// a version before these annotations leaves the last ones as they were).
// The kubepact CLI's version command reads them.
const (
	LeaseAnnotation       = "kubepact.io/version"
	LeaseHolderAnnotation = "kubepact.io/version-holder"
)
