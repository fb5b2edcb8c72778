#!/usr/bin/env bash
# Installs PGlite (PostgreSQL compiled to WebAssembly) with pgvector and its
# Postgres wire-protocol server, for the pgvector integration tests
# (vector/pgvector_integration_test.go). Needs node and npm.
# Idempotent: cached under ${SPATE_CI_CACHE:-$HOME/.cache/spate-ci}/pglite.
set -euo pipefail
cache="${SPATE_CI_CACHE:-$HOME/.cache/spate-ci}"
dir="$cache/pglite"
want="@electric-sql/pglite@0.5.14 @electric-sql/pglite-socket@0.2.17 @electric-sql/pglite-pgvector@0.0.15"
if ! command -v npm >/dev/null 2>&1; then
  if command -v apt-get >/dev/null 2>&1; then
    echo "pglite: installing nodejs and npm with apt-get"
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm) || {
      echo "pglite: could not install npm; the pgvector tests will skip"; exit 0; }
  else
    echo "pglite: no npm and no apt-get; the pgvector tests will skip"; exit 0
  fi
fi
if [ -f "$dir/.installed" ] && [ "$(cat "$dir/.installed")" = "$want" ]; then
  echo "pglite: cached at $dir"
  exit 0
fi
mkdir -p "$dir"
cd "$dir"
[ -f package.json ] || echo '{"name":"spate-ci-pglite","private":true}' > package.json
echo "pglite: npm install $want"
# shellcheck disable=SC2086
npm install --no-audit --no-fund --loglevel=error $want
echo "$want" > .installed
echo "pglite: installed at $dir"
