# syntax=docker/dockerfile:1
# leadgate: multi-stage. `build` compiles with dev dependencies; the final stage holds production
# dependencies and compiled output only, runs as a non-root user, and gets signals directly.
#
#   docker build -t leadgate .
#   docker run -p 8080:8080 -p 9090:9090 -v $PWD/my-config:/etc/leadgate leadgate
#
# Offline builds (no registry inside the build, as on CI here): put dist/ and production
# node_modules/ in the context and pass --build-arg COMPILED=prebuilt (scripts/verify-image.sh).
# The active LTS line, the one CI tests (scripts/node-line.sh pins the same line).
ARG NODE_IMAGE=node:26-bookworm-slim
ARG COMPILED=build

FROM ${NODE_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund --ignore-scripts
COPY tsconfig.json vitest.config.ts ./
COPY src ./src
COPY bench ./bench
COPY test ./test
RUN npx tsc -p tsconfig.json && npm prune --omit=dev --no-audit --no-fund

FROM ${NODE_IMAGE} AS prebuilt
WORKDIR /app
COPY package.json ./
COPY node_modules ./node_modules
COPY dist/src ./dist/src

FROM ${COMPILED} AS compiled

FROM ${NODE_IMAGE}
ENV NODE_ENV=production LEADGATE_CONFIG=/etc/leadgate/gateway.yaml
WORKDIR /app
COPY --from=compiled /app/package.json ./package.json
COPY --from=compiled /app/node_modules ./node_modules
COPY --from=compiled /app/dist/src ./dist/src
COPY config/gateway.yaml config/leads.yaml /etc/leadgate/
USER 1000:1000
EXPOSE 8080 9090
STOPSIGNAL SIGTERM
ENTRYPOINT ["node", "/app/dist/src/main.js"]
CMD ["serve"]
