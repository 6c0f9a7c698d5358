#!/usr/bin/env bash
# Regenerates charts/kubepact/README.md from charts/kubepact/values.yaml (its
# "# --" comments) and charts/kubepact/README.md.gotmpl, with helm-docs
# v1.14.2 (TestChartREADME also fails on a value with no description):
#
#   bash hack/helm-docs.sh [CHARTS]
#
# CHARTS (default: the repository's charts/) is the directory searched for
# charts; test/helm's TestChartREADME passes a copy and compares.
set -euo pipefail
charts="$(realpath "${1:-$(dirname "$0")/../charts}")"
cd "$(dirname "$0")/.."
go run github.com/norwoodj/helm-docs/cmd/helm-docs@v1.14.2 \
	--chart-search-root "$charts" --sort-values-order file --log-level warning
