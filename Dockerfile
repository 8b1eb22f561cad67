# syntax=docker/dockerfile:1
# leadgate: multi-stage. `build` compiles with dev dependencies; the final stage holds production
# dependencies and compiled output only, runs as a non-root user, and gets signals directly.
#
#   docker build -t leadgate .                      (from the repository root)
#   docker run -p 8080:8080 -p 9090:9090 -e LEADGATE_UPSTREAM_URL=http://backend:3000 \
#     -e LEADGATE_API_KEY_SHA256=... -e LEADGATE_SIGNING_SECRET=... leadgate
#   docker run ... -v $PWD/my-config:/etc/leadgate leadgate     (your own config; listen on 0.0.0.0)
#
# Offline builds (no registry inside the build, as on CI here): `npm run image:prebuilt` puts the
# compiled output and production node_modules in .image/, then
#   docker build --build-arg COMPILED=prebuilt -t leadgate .
# (scripts/verify-image.sh does exactly this with buildah, on this Dockerfile as it is).
# The active LTS line, the one CI tests (scripts/node-line.sh pins the same line).
ARG NODE_IMAGE=node:26-bookworm-slim
ARG COMPILED=build

FROM ${NODE_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund --ignore-scripts
COPY tsconfig.json vitest.config.ts ./
COPY src ./src
COPY packages/client/src ./packages/client/src
COPY bench ./bench
COPY test ./test
RUN npx tsc -p tsconfig.json && npm prune --omit=dev --no-audit --no-fund

FROM ${NODE_IMAGE} AS prebuilt
WORKDIR /app
COPY package.json ./
COPY .image/node_modules ./node_modules
COPY .image/dist/src ./dist/src
COPY .image/dist/packages ./dist/packages

FROM ${COMPILED} AS compiled

FROM ${NODE_IMAGE}
ENV NODE_ENV=production LEADGATE_CONFIG=/etc/leadgate/gateway.yaml
WORKDIR /app
COPY --from=compiled /app/package.json ./package.json
COPY --from=compiled /app/node_modules ./node_modules
COPY --from=compiled /app/dist/src ./dist/src
# leadgate/client (the CLI's digest and token) is compiled from packages/client
COPY --from=compiled /app/dist/packages ./dist/packages
# The default config serves from the environment (config/container.yaml); mount your own over it.
COPY config/container.yaml /etc/leadgate/gateway.yaml
USER 1000:1000
EXPOSE 8080 9090
STOPSIGNAL SIGTERM
ENTRYPOINT ["node", "/app/dist/src/main.js"]
CMD ["serve"]
