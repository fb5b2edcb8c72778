#!/usr/bin/env bash
# Headless Chromium for the HTML report's end-to-end test (issue 6): Debian's
# chromium package, installed when missing. The test looks for chromium on
# PATH and skips, naming this script, only when it cannot be had.
set -euo pipefail
for b in chromium chromium-browser; do
  if command -v "$b" >/dev/null 2>&1; then
    echo "chromium: $("$b" --version 2>/dev/null || echo present)"
    exit 0
  fi
done
if ! command -v apt-get >/dev/null 2>&1; then
  echo "chromium: not installed and no apt-get here: the HTML report's browser test will skip" >&2
  exit 0
fi
sudo=""
if [ "$(id -u)" != 0 ]; then
  if command -v sudo >/dev/null 2>&1; then
    sudo="sudo -n"
  else
    echo "chromium: not root and no sudo: cannot install; the HTML report's browser test will skip" >&2
    exit 0
  fi
fi
export DEBIAN_FRONTEND=noninteractive
# A failed install leaves the test to skip with its message rather than
# failing every other test of CI.
if $sudo apt-get update -qq && $sudo apt-get install -y -qq --no-install-recommends chromium >/dev/null; then
  echo "chromium: installed $(chromium --version 2>/dev/null || true)"
else
  echo "chromium: apt-get install chromium failed: the HTML report's browser test will skip" >&2
fi
