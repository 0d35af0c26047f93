# Oncely's images, one build. `app` (the default target: `docker build .`) runs the API, the
# uploads worker, the migration and the CLI; `transcode` adds ffmpeg and poppler for the
# transcode worker's audio, video and PDF steps, which the other roles never run. The role
# is the command: api | worker, and a worker's queues are WORKER_QUEUES. Sizes:
# docs/OPERATIONS.md.
#
# The base is pinned to the Node.js version the project tests (scripts/node.sh's
# NODE_VERSION; test/unit/compose.test.ts keeps the two equal). To refresh it, change both.
ARG NODE_IMAGE=node:26.12.1-bookworm-slim

FROM ${NODE_IMAGE} AS build
WORKDIR /app
ENV NODE_ENV=production
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force
COPY tsconfig.json ./
COPY src ./src
COPY workflows ./workflows
COPY activities ./activities
COPY bin ./bin
COPY scripts ./scripts
# The build's commit for /healthz, oncely_build_info and --version (no .git in the context).
ARG ONCELY_COMMIT=unknown
RUN ONCELY_COMMIT=$ONCELY_COMMIT node scripts/build.mjs && mkdir -p .data
# Only what the roles load stays (what goes, and why: scripts/prune-runtime.sh).
RUN sh scripts/prune-runtime.sh

# What every role's image starts from: tini as PID 1, so signals reach node and the
# children a worker spawns (ffmpeg, pdftoppm) are reaped.
FROM ${NODE_IMAGE} AS runtime
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends tini \
 && apt-get clean && rm -rf /var/lib/apt/lists/* /var/cache/apt/*
WORKDIR /app
ENV NODE_ENV=production
# API (PORT), the operator port of every role (OPS_PORT: /healthz, /readyz, /metrics) and a
# worker's health and metrics (WORKER_HTTP_PORT).
EXPOSE 3000 9090 9091
# Ready when the role in this container answers /readyz (bin/oncely-healthcheck finds which).
HEALTHCHECK --interval=10s --timeout=4s --start-period=60s --retries=3 CMD ["node", "/app/bin/oncely-healthcheck"]
# bin/oncely-node picks the node flags each role is measured with.
ENTRYPOINT ["/usr/bin/tini", "--", "/app/bin/oncely-node"]

FROM runtime AS transcode
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends ffmpeg poppler-utils \
 && apt-get clean && rm -rf /var/lib/apt/lists/* /var/cache/apt/*
COPY --from=build /app /app
RUN ln -s /app/bin/oncely /usr/local/bin/oncely && chown node:node /app/.data
USER node
CMD ["worker"]

FROM runtime AS app
COPY --from=build /app /app
RUN ln -s /app/bin/oncely /usr/local/bin/oncely && chown node:node /app/.data
USER node
CMD ["api"]
