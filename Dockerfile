# The support-sync worker. Runs TypeScript directly with tsx (no build step to drift from the sources).
FROM node:20-bookworm-slim
WORKDIR /app
ENV NODE_ENV=production
# A heap cap for every thread of the worker (docs/operations/worker-memory.md): without it V8 sizes the
# heap for the host and lets garbage pile up (peak RSS 733 MB in a 10k-ticket first sync, 531 MB with it).
# `docker run -e NODE_OPTIONS=…` replaces it.
ENV NODE_OPTIONS=--max-old-space-size=512
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund
COPY schemas ./schemas
COPY connectors ./connectors
COPY activities ./activities
COPY workflows ./workflows
COPY worker ./worker
COPY forecast ./forecast
COPY cli ./cli
COPY embedded ./embedded
COPY companion ./companion
COPY tsconfig.json ./
USER node
ENTRYPOINT ["npx", "tsx", "cli/main.ts"]
CMD ["worker"]
