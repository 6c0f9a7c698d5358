#!/usr/bin/env bash
# Runs every fuzz target for a while each: 5s by default (as CI does), or as
# long as the first argument says (60s for a local soak). A crashing input is
# saved in <package>/testdata/fuzz/<target>/ and the script fails.
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime="${1:-5s}"
# Go before 1.27 can fail a target with a bare "context deadline exceeded" when
# -fuzztime ends while a worker is busy, having found nothing
# (go.dev/issue/75804). Fuzz with a toolchain that has the fix; the Go module
# proxy serves it when the installed one is older.
fuzzgo=go1.27.2
installed="$(go env GOVERSION)"
if [ "$(printf '%s\n%s\n' "$fuzzgo" "$installed" | sort -V | head -n1)" != "$fuzzgo" ]; then
	export GOTOOLCHAIN="$fuzzgo"
fi
echo "fuzzing with $(go env GOVERSION)"
for pkg in ./keys ./nonce ./csr ./tenant ./identity ./kubeconfig ./apis/authentication/v1beta1; do
	for target in $(go test -list '^Fuzz' "$pkg" | grep '^Fuzz'); do
		echo "fuzzing $pkg $target for $fuzztime"
		go test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" -fuzzminimizetime 2s "$pkg"
	done
done
