#!/bin/sh
# Builds the Go tools Oncely runs beside itself (its Temporal dev server, Temporal's server
# and SQL tool, Versity S3 Gateway, Toxiproxy, Jaeger) from the Go module proxy at pinned
# versions into a per-user cache, once; later calls reuse them. Prints nothing when
# everything is already there.
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
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

# in_module NAME MODULE@VERSION STEPS: builds NAME once, by running the function STEPS (which
# reads $module and $version) inside a throwaway Go module, for tools `go install` refuses.
in_module() {
  name=$1 id=$2 steps=$3 module=${2%@*} version=${2#*@}
  stamp="$TOOLS_DIR/.$name.version"
  if [ -x "$TOOLS_DIR/$name" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$id" ]; then return 0; fi
  command -v go >/dev/null 2>&1 || { echo "oncely: Go is needed to build $name ($id)" >&2; exit 1; }
  echo "oncely: building $name from $id (first run only, minutes) ..." >&2
  work=$(mktemp -d)
  (
    cd "$work"
    go mod init "oncely-tools/$name" >/dev/null 2>&1
    "$steps"
  ) >&2
  rm -rf "$work"
  echo "$id" > "$stamp"
}

# own NAME DIR TOOLCHAIN: a Go program of this repository (DIR holds its module), rebuilt
# whenever its source changes.
own() {
  name=$1 dir=$2 toolchain=$3
  stamp="$TOOLS_DIR/.$name.version"
  id=$(cat "$dir/go.mod" "$dir/go.sum" "$dir"/*.go | sha256sum | cut -c1-16)
  if [ -x "$TOOLS_DIR/$name" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$id" ]; then return 0; fi
  command -v go >/dev/null 2>&1 || { echo "oncely: Go is needed to build $name ($dir)" >&2; exit 1; }
  echo "oncely: building $name from $dir (first run only, minutes) ..." >&2
  (cd "$dir" && GOTOOLCHAIN="$toolchain" GOFLAGS=-mod=readonly go build -trimpath -ldflags "-s -w" -o "$TOOLS_DIR/$name.tmp" .) >&2
  mv "$TOOLS_DIR/$name.tmp" "$TOOLS_DIR/$name"
  echo "$id" > "$stamp"
}

# Docker Compose v5 (its go.mod has exclude directives, which only a main module may have): the
# throwaway module requires it and repeats them.
compose_steps() {
  gomod=$(GOFLAGS=-mod=mod go mod download -json "$module@$version" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p')
  sed -n '/^exclude (/,/^)/p' "$gomod" >> go.mod
  GOFLAGS=-mod=mod go get "$module@$version"
  GOFLAGS=-mod=mod go build -ldflags "-X $module/internal.Version=$version" -o "$TOOLS_DIR/docker-compose" "$module/cmd"
}

# Jaeger v2, the trace backend tests and `npm start -- --traces` use (its go.mod has a replace
# directive): built as a tool of the throwaway module.
jaeger_steps() {
  GOFLAGS=-mod=mod go get -tool "$module/cmd/jaeger@$version"
  GOFLAGS=-mod=mod go build -o "$TOOLS_DIR/jaeger" "$module/cmd/jaeger"
}

for tool in ${*:-temporal-dev}; do
  case "$tool" in
    # The embedded default's Temporal: the server module of the compose stack (1.32.2) with
    # its web UI (2.58.1), one process on a SQLite file (tools/temporal-dev).
    temporal-dev) own temporal-dev "$ROOT/tools/temporal-dev" go1.27.3 ;;
    versitygw) need versitygw github.com/versity/versitygw/cmd/versitygw@v1.7.0 ;;
    toxiproxy) need server github.com/Shopify/toxiproxy/v2/cmd/server@v2.12.0 ;;
    compose) in_module docker-compose github.com/docker/compose/v5@v5.6.0 compose_steps ;;
    jaeger) in_module jaeger github.com/jaegertracing/jaeger@v1.75.0 jaeger_steps ;;
    # The real Temporal server (on PostgreSQL) and its schema tool, the compose file's
    # version; it needs Go >= 1.26.10, so the build takes go1.27.3 from the module proxy.
    temporal-server) need temporal-server go.temporal.io/server/cmd/server@v1.32.2 go1.27.3 ;;
    temporal-sql-tool) need temporal-sql-tool go.temporal.io/server/cmd/tools/sql@v1.32.2 go1.27.3 ;;
    *) echo "oncely: unknown tool $tool" >&2; exit 2 ;;
  esac
done
