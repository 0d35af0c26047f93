# Oncely's images, one build. `app` runs the API, the uploads worker, the migration and the
# CLI; `transcode` (the default target) adds ffmpeg and poppler for the transcode worker's
# audio, video and PDF steps, which the other roles never run, so `app` stays the smaller
# image (sizes: docs/OPERATIONS.md). The role is the command: api | worker, and a worker's
# queues are WORKER_QUEUES. The media packages are installed before the application is
# copied in, so a code change rebuilds neither them nor the dependencies.
FROM node:26-bookworm-slim AS build
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

FROM node:26-bookworm-slim AS app
WORKDIR /app
ENV NODE_ENV=production
COPY --from=build /app /app
RUN ln -s /app/bin/oncely /usr/local/bin/oncely && chown node:node /app/.data
USER node
# API (PORT) and a worker's health and metrics (WORKER_HTTP_PORT).
EXPOSE 3000 9091
# Ready when the role in this container answers /readyz (bin/oncely-healthcheck finds which).
HEALTHCHECK --interval=10s --timeout=4s --start-period=60s --retries=3 CMD ["node", "/app/bin/oncely-healthcheck"]
# bin/oncely-node picks the node flags each role is measured with.
ENTRYPOINT ["/app/bin/oncely-node"]
CMD ["api"]

FROM node:26-bookworm-slim AS transcode
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends ffmpeg poppler-utils \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /app
ENV NODE_ENV=production
COPY --from=build /app /app
RUN ln -s /app/bin/oncely /usr/local/bin/oncely && chown node:node /app/.data
USER node
EXPOSE 3000 9091
HEALTHCHECK --interval=10s --timeout=4s --start-period=60s --retries=3 CMD ["node", "/app/bin/oncely-healthcheck"]
ENTRYPOINT ["/app/bin/oncely-node"]
CMD ["worker"]
