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
ENTRYPOINT ["node", "--expose-gc", "--max-semi-space-size=8", "dist/main.js"]
CMD ["api"]
