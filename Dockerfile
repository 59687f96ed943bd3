# Gatehouse container image. Untested here (no Docker engine on the development machines):
# kept correct by reading. Build: docker build -t gatehouse .
# Run:   docker run -p 8080:8080 -v gatehouse-data:/data gatehouse

# --- build: compile TypeScript and the better-sqlite3 native addon ---
FROM node:24-bookworm-slim AS build
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 make g++ \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY gen ./gen
COPY src ./src
RUN npm run build && npm prune --omit=dev

# --- runtime: only what serving needs, as a non-root user ---
FROM node:24-bookworm-slim
ENV NODE_ENV=production \
    GATEHOUSE_HOST=0.0.0.0 \
    GATEHOUSE_PORT=8080 \
    GATEHOUSE_DB=/data/gatehouse.db
WORKDIR /app
COPY --from=build /app/package.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY bin ./bin
RUN mkdir -p /data && chown node:node /data
USER node
VOLUME ["/data"]
EXPOSE 8080
HEALTHCHECK --interval=15s --timeout=3s --start-period=10s --retries=3 \
  CMD node -e "fetch('http://127.0.0.1:'+(process.env.GATEHOUSE_PORT||8080)+'/readyz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"
ENTRYPOINT ["node", "bin/gatehouse.js"]
CMD ["serve"]
