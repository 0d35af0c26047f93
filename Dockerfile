# Oncely application image: one image, two roles (api, worker) chosen by the command.
FROM node:24-bookworm-slim
WORKDIR /app
ENV NODE_ENV=production
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json ./
COPY src ./src
COPY workflows ./workflows
COPY activities ./activities
COPY bin ./bin
COPY scripts ./scripts
RUN node scripts/build.mjs
USER node
EXPOSE 3000
# bin/oncely-node picks the node flags each role is measured with.
ENTRYPOINT ["/app/bin/oncely-node"]
CMD ["api"]
