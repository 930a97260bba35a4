# pagescript: Node 24 on Debian slim with Debian's chromium-headless-shell, run as a non-root user.
# Not built on the development machine (no Docker engine there); see README, "Container".
FROM node:24-bookworm-slim AS build
WORKDIR /app
ENV PUPPETEER_SKIP_DOWNLOAD=1
COPY package.json package-lock.json .puppeteerrc.cjs ./
RUN npm install --no-audit --no-fund
COPY tsconfig.json tsup.config.ts ./
COPY src ./src
COPY sandbox ./sandbox
COPY playground ./playground
RUN node node_modules/tsup/dist/cli-default.js && npm prune --omit=dev

FROM node:24-bookworm-slim
# CHROMIUM=shell runs /usr/lib/chromium/chromium-headless-shell. For CHROMIUM=full add `chromium` below.
RUN apt-get update \
 && apt-get install -y --no-install-recommends chromium-headless-shell fonts-liberation ca-certificates tini \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --create-home --uid 10001 pagescript
WORKDIR /app
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY package.json ./
USER pagescript
ENV NODE_ENV=production \
    MALLOC_ARENA_MAX=2 \
    HOST=0.0.0.0 \
    PORT=3000 \
    CHROMIUM=shell
EXPOSE 3000
# /health is 200 when the browser is ready (also while Redis is away), 503 while starting or draining.
HEALTHCHECK --interval=15s --timeout=5s --start-period=20s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 3000) + '/health').then(r => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# tini reaps Chromium's helper processes and passes SIGTERM on for a graceful shutdown.
ENTRYPOINT ["/usr/bin/tini", "--"]
CMD ["node", "--no-node-snapshot", "--expose-gc", "dist/server.js"]
