#!/usr/bin/env bash
# Runs every fuzz target for a while each: 5s by default (as CI does), or as
# long as the first argument says (60s for a local soak). A crashing input is
# saved in <package>/testdata/fuzz/<target>/ and the script fails.
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime="${1:-5s}"
for pkg in ./keys ./nonce ./csr ./tenant ./identity ./kubeconfig ./apis/authentication/v1beta1; do
	for target in $(go test -list '^Fuzz' "$pkg" | grep '^Fuzz'); do
		echo "fuzzing $pkg $target for $fuzztime"
		go test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" -fuzzminimizetime 2s "$pkg"
	done
done
