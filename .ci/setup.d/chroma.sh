#!/usr/bin/env bash
# Installs Chroma's server (npm chromadb with its Linux x64 bindings, pinned:
# newer bindings need a newer glibc) for the Chroma integration tests
# (vector/chroma_integration_test.go). Needs node and npm.
# Idempotent: cached under ${SPATE_CI_CACHE:-$HOME/.cache/spate-ci}/chroma.
set -euo pipefail
cache="${SPATE_CI_CACHE:-$HOME/.cache/spate-ci}"
dir="$cache/chroma"
want="chromadb@3.0.10 chromadb-js-bindings-linux-x64-gnu@1.0.5"
if ! command -v npm >/dev/null 2>&1; then
  if command -v apt-get >/dev/null 2>&1; then
    echo "chroma: installing nodejs and npm with apt-get"
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm) || {
      echo "chroma: could not install npm; the Chroma tests will skip"; exit 0; }
  else
    echo "chroma: no npm and no apt-get; the Chroma tests will skip"; exit 0
  fi
fi
if [ -f "$dir/.installed" ] && [ "$(cat "$dir/.installed")" = "$want" ]; then
  echo "chroma: cached at $dir"
  exit 0
fi
mkdir -p "$dir"
cd "$dir"
[ -f package.json ] || echo '{"name":"spate-ci-chroma","private":true}' > package.json
echo "chroma: npm install $want"
# shellcheck disable=SC2086
npm install --no-audit --no-fund --loglevel=error $want
echo "$want" > .installed
echo "chroma: installed at $dir"
