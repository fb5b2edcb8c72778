#!/usr/bin/env bash
# Builds a real OpenTelemetry Collector (OTLP receiver, file exporter) for the
# telemetry integration test (telemetry/integration_test.go): it receives
# spate's OTLP metrics and spans over HTTP and gRPC and writes them to a file.
# Idempotent: cached under ${SPATE_CI_CACHE:-$HOME/.cache/spate-ci}/bin.
set -euo pipefail
version=0.161.0
cache="${SPATE_CI_CACHE:-$HOME/.cache/spate-ci}"
bin="$cache/bin"
mkdir -p "$bin"
if [ -x "$bin/otelcol-spate" ] && [ "$(cat "$bin/otelcol-spate.version" 2>/dev/null)" = "$version" ]; then
  echo "otelcol-spate $version: cached at $bin/otelcol-spate"
  exit 0
fi
echo "building an OpenTelemetry Collector $version with the collector builder (a few minutes)"
GOBIN="$bin" GOFLAGS=-buildvcs=false go install "go.opentelemetry.io/collector/cmd/builder@v$version"
work="$cache/otelcol-build"
rm -rf "$work"
mkdir -p "$work"
cat > "$work/builder.yaml" <<YAML
dist:
  name: otelcol-spate
  description: OpenTelemetry Collector for spate's integration tests
  output_path: $work/dist
receivers:
  - gomod: go.opentelemetry.io/collector/receiver/otlpreceiver v$version
exporters:
  - gomod: github.com/open-telemetry/opentelemetry-collector-contrib/exporter/fileexporter v$version
YAML
# The builder brings the default config providers (file, env, yaml) of the
# same release.
GOFLAGS=-buildvcs=false nice -n 10 "$bin/builder" --config "$work/builder.yaml"
cp "$work/dist/otelcol-spate" "$bin/otelcol-spate"
echo "$version" > "$bin/otelcol-spate.version"
rm -rf "$work"
"$bin/otelcol-spate" components >/dev/null && echo "otelcol-spate $version: built at $bin/otelcol-spate"
