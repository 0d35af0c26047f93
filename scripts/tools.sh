#!/bin/sh
# Builds the Go tools Oncely runs beside itself (Temporal CLI and server, Versity S3 Gateway,
# Toxiproxy, Jaeger) from the
# Go module proxy at pinned versions into a per-user cache, once; later calls reuse them.
# Prints nothing when everything is already there.
set -eu
TOOLS_DIR="${ONCELY_TOOLS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/oncely/bin}"
mkdir -p "$TOOLS_DIR"

need() { # need NAME MODULE@VERSION [GO_TOOLCHAIN]: the binary is installed as NAME (go install names it after its directory)
  name=$1 module=$2 toolchain=${3:-local}
  stamp="$TOOLS_DIR/.$name.version"
  if [ -x "$TOOLS_DIR/$name" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$module" ]; then return 0; fi
  command -v go >/dev/null 2>&1 || { echo "oncely: Go is needed to build $name ($module)" >&2; exit 1; }
  echo "oncely: building $name from $module (first run only) ..." >&2
  built=$(mktemp -d)
  # A module that needs a newer Go than the machine's names the toolchain the Go module
  # proxy serves for it (fetched once into the module cache).
  (cd /tmp && GOTOOLCHAIN="$toolchain" GOBIN="$built" GOFLAGS=-mod=mod go install "$module") >&2
  mv "$built/$(basename "${module%@*}")" "$TOOLS_DIR/$name"
  rm -rf "$built"
  echo "$module" > "$stamp"
}

# Docker Compose v5 cannot be `go install`ed (its go.mod has exclude directives, which only a
# main module may have): it is built from a throwaway module that requires it and repeats them.
need_compose() {
  version=$1 module=github.com/docker/compose/v5
  stamp="$TOOLS_DIR/.docker-compose.version"
  if [ -x "$TOOLS_DIR/docker-compose" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$module@$version" ]; then return 0; fi
  command -v go >/dev/null 2>&1 || { echo "oncely: Go is needed to build docker-compose ($module@$version)" >&2; exit 1; }
  echo "oncely: building docker-compose from $module@$version (first run only) ..." >&2
  work=$(mktemp -d)
  (
    cd "$work"
    go mod init oncely-tools/compose >/dev/null 2>&1
    gomod=$(GOFLAGS=-mod=mod go mod download -json "$module@$version" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p')
    sed -n '/^exclude (/,/^)/p' "$gomod" >> go.mod
    GOFLAGS=-mod=mod go get "$module@$version"
    GOFLAGS=-mod=mod go build -ldflags "-X $module/internal.Version=$version" -o "$TOOLS_DIR/docker-compose" "$module/cmd"
  ) >&2
  rm -rf "$work"
  echo "$module@$version" > "$stamp"
}

# Jaeger v2 (the trace backend tests and `npm start -- --traces` use) cannot be `go install`ed
# either (its go.mod has a replace directive): it is built as a tool of a throwaway module.
need_jaeger() {
  version=$1 module=github.com/jaegertracing/jaeger
  stamp="$TOOLS_DIR/.jaeger.version"
  if [ -x "$TOOLS_DIR/jaeger" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$module@$version" ]; then return 0; fi
  command -v go >/dev/null 2>&1 || { echo "oncely: Go is needed to build jaeger ($module@$version)" >&2; exit 1; }
  echo "oncely: building jaeger from $module@$version (first run only, several minutes) ..." >&2
  work=$(mktemp -d)
  (
    cd "$work"
    go mod init oncely-tools/jaeger >/dev/null 2>&1
    GOFLAGS=-mod=mod go get -tool "$module/cmd/jaeger@$version"
    GOFLAGS=-mod=mod go build -o "$TOOLS_DIR/jaeger" "$module/cmd/jaeger"
  ) >&2
  rm -rf "$work"
  echo "$module@$version" > "$stamp"
}

for tool in ${*:-temporal versitygw}; do
  case "$tool" in
    temporal) need temporal github.com/temporalio/cli/cmd/temporal@v1.5.1 ;;
    versitygw) need versitygw github.com/versity/versitygw/cmd/versitygw@v1.7.0 ;;
    toxiproxy) need server github.com/Shopify/toxiproxy/v2/cmd/server@v2.12.0 ;;
    compose) need_compose v5.6.0 ;;
    jaeger) need_jaeger v1.75.0 ;;
    # The real Temporal server (on PostgreSQL) and its schema tool, the compose file's
    # version; it needs Go >= 1.26.10, so the build takes go1.27.3 from the module proxy.
    temporal-server) need temporal-server go.temporal.io/server/cmd/server@v1.32.2 go1.27.3 ;;
    temporal-sql-tool) need temporal-sql-tool go.temporal.io/server/cmd/tools/sql@v1.32.2 go1.27.3 ;;
    *) echo "oncely: unknown tool $tool" >&2; exit 2 ;;
  esac
done
