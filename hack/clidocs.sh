#!/usr/bin/env bash
# Regenerates the CLI reference, docs/cli/*.md, from kubepact's cobra
# command tree, with hack/clidocs (a module of its own, so that cobra's doc
# package and go-md2man stay out of kubepact's go.mod):
#
#   bash hack/clidocs.sh [DIR]
#
# DIR (default: the repository's docs/cli) receives one page per command;
# the pages it held (kubepact*.md) are removed first. .ci/run generates
# into a temporary directory and fails when docs/cli differs: run this
# after changing a command, a flag or a help text.
set -euo pipefail
out="${1:-$(dirname "$0")/../docs/cli}"
mkdir -p "$out"
out="$(realpath "$out")"
cd "$(dirname "$0")/clidocs"
go run . "$out"
