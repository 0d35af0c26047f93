#!/bin/sh
# Builds local stand-ins for the base images the Dockerfiles name, where no image registry
# can be reached (the machines Oncely is developed and tested on): a Debian bookworm root
# from Debian's packages, and Node.js 26 on it (with the libatomic it links) from the npm registry (the same pinned
# package scripts/node.sh uses) with npm and a `node` user (uid 1000), as the official
# image has them. The machine's CA bundle goes in, so npm and apt inside a build trust what
# the machine trusts. Images already present are kept. Needs root, mmdebstrap and docker.
set -eu
cd "$(dirname "$0")/../.."
. scripts/node.sh

if ! docker image inspect debian:bookworm-slim >/dev/null 2>&1; then
  echo "oncely: building the debian:bookworm-slim stand-in from Debian's packages ..." >&2
  mmdebstrap --quiet --variant=minbase --include=ca-certificates bookworm - | docker import - debian:bookworm-slim >/dev/null
fi

if ! docker image inspect node:$NODE_VERSION-bookworm-slim >/dev/null 2>&1; then
  echo "oncely: building the node:$NODE_VERSION-bookworm-slim stand-in (Node $NODE_VERSION) ..." >&2
  ctx=$(mktemp -d)
  trap 'rm -rf "$ctx"' EXIT
  cp "$(command -v node)" "$ctx/node"
  (cd "$ctx" && npm pack --silent npm@11 >/dev/null && mkdir npm && tar -xzf npm-*.tgz -C npm --strip-components=1 && rm npm-*.tgz)
  cp /etc/ssl/certs/ca-certificates.crt "$ctx/machine-ca.crt"
  cat > "$ctx/Dockerfile" <<'DOCKERFILE'
FROM debian:bookworm-slim
RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends libatomic1 && apt-get clean && rm -rf /var/lib/apt/lists/* /var/cache/apt/*
COPY machine-ca.crt /usr/local/share/ca-certificates/machine-ca.crt
COPY node /usr/local/bin/node
COPY npm /usr/local/lib/node_modules/npm
RUN ln -s ../lib/node_modules/npm/bin/npm-cli.js /usr/local/bin/npm \
 && ln -s ../lib/node_modules/npm/bin/npx-cli.js /usr/local/bin/npx \
 && groupadd --gid 1000 node && useradd --uid 1000 --gid node --shell /bin/bash --create-home node
ENV NODE_EXTRA_CA_CERTS=/usr/local/share/ca-certificates/machine-ca.crt \
    NPM_CONFIG_CAFILE=/usr/local/share/ca-certificates/machine-ca.crt \
    NODE_VERSION=26
CMD ["node"]
DOCKERFILE
  docker build --quiet --network host -t node:$NODE_VERSION-bookworm-slim "$ctx" >/dev/null
fi
