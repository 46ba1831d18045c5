# The support-sync worker. Runs TypeScript directly with tsx (no build step to drift from the sources).
FROM node:20-bookworm-slim
WORKDIR /app
ENV NODE_ENV=production
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
