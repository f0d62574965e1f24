# syntax=docker/dockerfile:1
# vcu-sync as a container: the daemon (`vcu-sync run`) as a non-root user on the Node that
# package.json pins (devDependencies.node; test/foundation/dockerfile.test.ts checks they agree).
#   docker build -t vcu-sync .
#   docker run -v vcu-sync-data:/var/lib/vcu-sync -p 8787:8787 -p 8788:8788 \
#     -e VCU_SYNC_OPERATOR_URL=... -e VCU_SYNC_MARKETPLACE_ID=... \
#     -e VCU_SYNC_API_KEY_FILE=/run/secrets/api-key -e VCU_SYNC_API_TOKEN_FILE=/run/secrets/api-token \
#     -e VCU_SYNC_WEBHOOK_SECRET_FILE=/run/secrets/webhook-secret vcu-sync

# Build: installed exactly from the lockfile (dev dependencies bring the TypeScript compiler;
# `npm ci` compiles dist/ through the prepare script), then the dev dependencies are dropped.
FROM node:24.21.0-bookworm-slim AS build
WORKDIR /opt/vcu-sync
COPY package.json package-lock.json tsconfig.json tsconfig.build.json ./
COPY bin ./bin
COPY src ./src
COPY drizzle ./drizzle
RUN npm ci --no-audit --no-fund && npm prune --omit=dev --no-audit --no-fund

# Run: the compiled daemon, its production dependencies and the SQLite migrations, nothing else.
FROM node:24.21.0-bookworm-slim
ENV NODE_ENV=production \
    VCU_SYNC_DB=/var/lib/vcu-sync/vcu-sync.db \
    VCU_SYNC_LISTEN=0.0.0.0:8787 \
    VCU_SYNC_WEBHOOK_LISTEN=0.0.0.0:8788
WORKDIR /opt/vcu-sync
COPY --from=build /opt/vcu-sync/package.json ./
COPY --from=build /opt/vcu-sync/bin ./bin
COPY --from=build /opt/vcu-sync/dist ./dist
COPY --from=build /opt/vcu-sync/drizzle ./drizzle
COPY --from=build /opt/vcu-sync/node_modules ./node_modules
# The database lives in a volume owned by the image's unprivileged `node` user (uid 1000); the code
# stays root-owned and read-only to it. A mode like the systemd unit's StateDirectoryMode.
RUN install -d -o node -g node -m 0750 /var/lib/vcu-sync
VOLUME ["/var/lib/vcu-sync"]
USER node
# The API (with /healthz, /readyz, /metrics) and the operator's webhooks.
EXPOSE 8787 8788
# /healthz answers without a token. The SIGTERM stop is bounded at 30 s: stop with `docker stop -t 45`
# (compose: stop_grace_period: 45s) rather than the default 10 s, after which docker SIGKILLs it.
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:8787/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
STOPSIGNAL SIGTERM
ENTRYPOINT ["node", "bin/vcu-sync.js"]
CMD ["run"]
