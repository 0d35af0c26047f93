#!/bin/sh
# Run by the Dockerfile after the build: leaves in /app only what the image's roles load.
# Removed, each never loaded by a process started from the image:
#   - the Temporal core bridge's native libraries for other platforms (~110 MB): one
#     platform is this build's;
#   - PGlite (the embedded default's database) and the Temporal dev server's tools script:
#     the production image runs no development stack (src/role-settings.ts refuses to start
#     without DATABASE_URL and TEMPORAL_ADDRESS where they are missing);
#   - swc, the workflow bundler's compiler: image workers load dist/workflow-bundle.js;
#   - the sources the bundle was built from, except what it reads at run time (the SQL
#     migrations, the core's and each wing's, the web pages' sources and the client they
#     bundle, and the workflow sandbox's thread module).
set -eu
cd "$(dirname "$0")/.."
platform="$(uname -m)-unknown-linux-gnu"
[ -d "node_modules/@temporalio/core-bridge/releases/$platform" ] || { echo "prune-runtime: no core bridge for $platform" >&2; exit 1; }
for dir in node_modules/@temporalio/core-bridge/releases/*; do
  [ "$(basename "$dir")" = "$platform" ] || rm -rf "$dir"
done
rm -rf node_modules/@temporalio/core-bridge/sdk-core node_modules/@temporalio/core-bridge/src
rm -rf node_modules/@electric-sql node_modules/@swc
keep=$(mktemp -d)
# mktemp makes it private to root; the roles run as node.
chmod 755 "$keep"
mkdir -p "$keep/temporal"
# The core's migrations (src/db/migrations) and each wing's (src/<wing>/migrations).
for dir in src/*/migrations; do
  owner=$(basename "$(dirname "$dir")")
  mkdir -p "$keep/$owner"
  mv "$dir" "$keep/$owner/"
done
mv src/web src/client "$keep/"
mv src/temporal/sandbox-thread.cjs "$keep/temporal/"
rm -rf src workflows activities scripts tsconfig.json
mv "$keep" src
