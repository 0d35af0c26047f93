#!/bin/sh
# Makes a fresh clone runnable: installs npm dependencies when the lock file changed,
# builds the pinned Go tools into the user cache. Idempotent and quiet when nothing to do.
set -eu
cd "$(dirname "$0")/.."
if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  npm ci --no-audit --no-fund
fi
sh scripts/tools.sh "$@"
