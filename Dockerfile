# The support-sync worker image: compiled JavaScript (built in the first stage) on Node 22 LTS, with the
# production dependencies only. The embedded demo pieces (dev server, PostgreSQL) are development
# dependencies and absent here: the image connects to the Temporal cluster and warehouse it is configured
# for (docs/operations/deploy-worker.md).
FROM node:22-bookworm-slim AS build
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

FROM node:22-bookworm-slim
WORKDIR /app
ENV NODE_ENV=production
# A heap cap for every thread of the worker (docs/operations/worker-memory.md): without it V8 sizes the heap for the host and
# lets garbage pile up (peak RSS 733 MB in a 10k-ticket first sync, 531 MB with it).
# `docker run -e NODE_OPTIONS=…` replaces it.
ENV NODE_OPTIONS=--max-old-space-size=512
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force
COPY --from=build /app/dist ./dist
USER node
# Probes and metrics (`--metrics-port 9464`, METRICS_HOST=0.0.0.0) are opted into by the deployment.
ENTRYPOINT ["node", "dist/cli/main.js"]
CMD ["worker"]
