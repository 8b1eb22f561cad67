# syntax=docker/dockerfile:1
# Build: compile with dev dependencies. Run: production dependencies and compiled output only.
FROM node:22-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json ./
COPY src ./src
COPY bench ./bench
COPY test ./test
COPY vitest.config.ts ./
RUN npx tsc -p tsconfig.json && npm prune --omit=dev

FROM node:22-bookworm-slim
ENV NODE_ENV=production LEADGATE_CONFIG=/etc/leadgate/gateway.yaml
WORKDIR /app
COPY --from=build /app/package.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist/src ./dist/src
COPY config/gateway.yaml config/leads.yaml /etc/leadgate/
USER node
EXPOSE 8080 9090
STOPSIGNAL SIGTERM
ENTRYPOINT ["node", "/app/dist/src/main.js"]
CMD ["serve"]
