#!/usr/bin/env bash
# Runs every Go native fuzz target of the module (or of the packages in
# $PKGS) for a bounded time each, one after the other, and prints one
# summary line per target. A target that finds a failing input fails the
# script; Go saves the input under the package's testdata/fuzz/<Target>/,
# where it stays as a regression case that plain `go test` runs.
#
# New coverage is minimized for FUZZMINIMIZETIME (default 1x: one try),
# so that a short session spends its time on new inputs (about 100k
# executions in 10 s for most targets here); a failing input is saved
# either way.
#
#   bench/fuzz.sh            # 10s per target
#   bench/fuzz.sh 3m         # a longer session
#   FUZZMINIMIZETIME=10s bench/fuzz.sh 3m
#   PKGS='./internal/client/sse ./internal/probe' FUZZ_PARALLEL=1 bench/fuzz.sh 30s
set -euo pipefail
cd "$(dirname "$0")/.."

fuzztime="${1:-${FUZZTIME:-10s}}"
minimize="${FUZZMINIMIZETIME:-1x}"
parallel=()
if [[ -n "${FUZZ_PARALLEL:-}" ]]; then
	parallel=(-parallel "$FUZZ_PARALLEL")
fi
log="$(mktemp)"
trap 'rm -f "$log"' EXIT

failed=0
summary=()
# shellcheck disable=SC2086 # $PKGS is a list of patterns
for pkg in $(go list ${PKGS:-./...}); do
	targets="$(go test -list '^Fuzz' "$pkg" | grep '^Fuzz' || true)"
	for target in $targets; do
		echo "== $pkg $target ($fuzztime)"
		status=ok
		corpus="$(go list -f '{{.Dir}}' "$pkg")/testdata/fuzz/$target"
		before="$( (ls "$corpus" 2>/dev/null || true) | wc -l)"
		if ! go test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" -fuzzminimizetime "$minimize" "${parallel[@]}" "$pkg" >"$log" 2>&1; then
			after="$( (ls "$corpus" 2>/dev/null || true) | wc -l)"
			if [[ "$after" == "$before" ]] && grep -q '^    context deadline exceeded$' "$log" && ! grep -q -e 'panic:' -e 'Failing input' "$log"; then
				# Go 1.26's coordinator can report its own -fuzztime
				# deadline as a failure on a busy machine, with no input
				# (go.dev/issue/75804, fixed in Go 1.27): not a finding.
				status=ok-75804
			else
				status=FAILED
				failed=1
				cat "$log"
			fi
		fi
		last="$(grep -E '^fuzz: elapsed' "$log" | tail -n 1 || true)"
		line="$(printf '%-9s %-45s %-28s %s' "$status" "${pkg#github.com/spate-dev/spate/}" "$target" "${last#fuzz: }")"
		echo "$line"
		summary+=("$line")
	done
done
printf '%s\n' "${summary[@]}"
exit "$failed"
