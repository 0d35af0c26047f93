# Oncely application image: one image, two roles (api, worker) chosen by the command.
FROM node:20-bookworm-slim
WORKDIR /app
ENV NODE_ENV=production
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json ./
COPY src ./src
COPY workflows ./workflows
COPY activities ./activities
COPY bin ./bin
USER node
EXPOSE 3000
ENTRYPOINT ["node_modules/.bin/tsx", "src/main.ts"]
CMD ["api"]
