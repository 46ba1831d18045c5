# The support-sync worker image: compiled JavaScript (built in the first stage) on Node 24 LTS, with the
# production dependencies only. The embedded demo pieces (dev server, PostgreSQL) are development
# dependencies and absent here: the image connects to the Temporal cluster and warehouse it is configured
# for (docs/operations/deploy-worker.md).
#
# The base image, pinned by digest for a reproducible, tamper-evident build: node:24-bookworm-slim as published
# for Node 24.18.0. No registry is reachable where this file is maintained, so the digest was taken from public
# Dockerfiles that pin the same tag (three independent ones agree), not read from the registry here. Refresh
# it (a newer Node 24 patch) with `docker buildx imagetools inspect node:24-bookworm-slim` (or `crane digest`),
# or build with another: docker build --build-arg NODE_IMAGE=node:24-bookworm-slim@sha256:<digest> .
ARG NODE_IMAGE=node:24-bookworm-slim@sha256:6f7b03f7c2c8e2e784dcf9295400527b9b1270fd37b7e9a7285cf83b6951452d
FROM ${NODE_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY schemas ./schemas
COPY streams ./streams
COPY connectors ./connectors
COPY activities ./activities
COPY workflows ./workflows
COPY worker ./worker
COPY forecast ./forecast
COPY cli ./cli
COPY embedded ./embedded
COPY companion ./companion
COPY examples ./examples
COPY scripts/bundle-workflows.ts ./scripts/
# Compiles to dist/ and bundles the workflows once (dist/workflow-bundle.js): the worker loads that bundle.
RUN npm run build

# Only the production code: the compiled CLI, worker and what they load. The demo's own modules stay out —
# its source (companion/) and the embedded dev server (its packages are development dependencies anyway); a
# demo command run from the image (`start`) says in one line that they are not part of it. The embedded
# modules the CLI imports at start (choosing a configured or embedded Temporal and warehouse) stay:
# test/unit/image-contents.test.ts checks this list against the CLI's static imports.
FROM build AS production-files
RUN rm -rf dist/companion dist/embedded/temporal-server.* dist/embedded/temporal-cli.* \
      dist/embedded/temporal-wheel.*

FROM ${NODE_IMAGE}
WORKDIR /app
ENV NODE_ENV=production
# A heap cap for every thread of the worker (docs/operations/worker-memory.md): without it V8 sizes the heap for the host and
# lets garbage pile up, above all in the young generation (a 100k-ticket sync at 540 pages/s: peak RSS 743 MB
# with V8's defaults, 358 MB with these). `docker run -e NODE_OPTIONS=…` replaces it.
ENV NODE_OPTIONS="--max-old-space-size=512 --max-semi-space-size=8"
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force
COPY --from=production-files /app/dist ./dist
USER node
# The worker serves its probes on the loopback interface by default (METRICS_HOST=127.0.0.1), which is where
# Docker's health check runs: nothing is exposed until the deployment sets METRICS_HOST=0.0.0.0. Kubernetes
# ignores HEALTHCHECK and uses the Deployment's probes on the same port. Another command (`sync --once`) or
# port has no endpoint here: such a container reports unhealthy, which changes nothing for a one-off run.
EXPOSE 9464
HEALTHCHECK --interval=30s --timeout=5s --start-period=120s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:9464/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
ENTRYPOINT ["node", "dist/cli/main.js"]
CMD ["worker", "--metrics-port", "9464"]
