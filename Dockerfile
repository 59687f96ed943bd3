# Gatehouse container image. No Docker engine on the development machines: instead,
# test/package/image-layout.test.ts follows this file's stages in a temporary directory (COPY,
# RUN, ENV, ENTRYPOINT, CMD, HEALTHCHECK) and starts the server from the runtime stage's files
# alone; teach it any new instruction or RUN command. Build: docker build -t gatehouse .
# Run:   docker run -p 8080:8080 -v gatehouse-data:/data gatehouse
# Stop:  docker stop -t 15 <container>  (the server's grace period is 10 s, below that)

# --- build: compile TypeScript and bundle the web console (better-sqlite3 ships prebuilt
# N-API binaries) ---
FROM node:24-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY gen ./gen
COPY src ./src
COPY console ./console
COPY scripts ./scripts
RUN npm run build && npm prune --omit=dev

# --- runtime: only what serving needs, as a non-root user ---
FROM node:24-bookworm-slim
ENV NODE_ENV=production \
    GATEHOUSE_HOST=0.0.0.0 \
    GATEHOUSE_PORT=8080 \
    GATEHOUSE_DB=/data/gatehouse.db \
    GATEHOUSE_SHUTDOWN_TIMEOUT_MS=10000 \
    MALLOC_ARENA_MAX=2
WORKDIR /app
COPY --from=build /app/package.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY bin ./bin
# The v1 migration guide, served at /docs/v1-migration.md (v1 answers' Link headers point there).
COPY docs/v1-migration.md ./docs/v1-migration.md
RUN mkdir -p /data && chown node:node /data && chmod 700 /data
USER node
VOLUME ["/data"]
EXPOSE 8080
# /readyz over http, or https when a certificate is configured (self-signed accepted: the
# check only asks whether this very process answers).
HEALTHCHECK --interval=15s --timeout=3s --start-period=10s --retries=3 \
  CMD ["node", "bin/healthcheck.js"]
# Node flags for the server, and MALLOC_ARENA_MAX above: src/node-flags.ts says why
# (test/docs/node-flags.test.ts checks that these and package.json's start script agree).
# A container limited to one CPU needs nothing more: serve then restarts itself with
# --single-threaded-gc (bin/gatehouse.js, on this image's Node 24).
ENTRYPOINT ["node", "--max-semi-space-size=8", "--heap-growing-percent=100", "bin/gatehouse.js"]
CMD ["serve"]
