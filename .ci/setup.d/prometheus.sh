#!/usr/bin/env bash
# Builds a real Prometheus server for the telemetry integration test
# (telemetry/integration_test.go): it scrapes spate's --metrics-addr.
# Idempotent: the binary is cached under ${SPATE_CI_CACHE:-$HOME/.cache/spate-ci}/bin.
set -euo pipefail
version=v0.316.0
cache="${SPATE_CI_CACHE:-$HOME/.cache/spate-ci}"
bin="$cache/bin"
mkdir -p "$bin"
if [ -x "$bin/prometheus" ] && [ "$(cat "$bin/prometheus.version" 2>/dev/null)" = "$version" ]; then
  echo "prometheus $version: cached at $bin/prometheus"
  exit 0
fi
echo "building prometheus $version from the Go module proxy (a few minutes)"
# remove_all_sd leaves out the cloud service discoveries: a smaller,
# faster build, and the test uses static targets only.
GOBIN="$bin" GOFLAGS=-buildvcs=false nice -n 10 go install -tags remove_all_sd \
  "github.com/prometheus/prometheus/cmd/prometheus@$version"
echo "$version" > "$bin/prometheus.version"
v=$("$bin/prometheus" --version 2>&1)
echo "${v%%$'\n'*}"
