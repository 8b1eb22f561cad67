#!/usr/bin/env bash
# `npm run image:prebuilt`: the Dockerfile's offline path. Compiles, and puts the compiled output
# and the production dependencies in .image/ (not ignored by .dockerignore), so that
#   docker build --build-arg COMPILED=prebuilt -t leadgate .
# needs no registry inside the build.
set -euo pipefail
cd "$(dirname "$0")/.."
npm run build --silent
rm -rf .image && mkdir -p .image/dist
cp -r dist/src .image/dist/src
cp -r dist/packages .image/dist/packages
cp package.json package-lock.json .image/
(cd .image && npm ci --omit=dev --ignore-scripts --no-audit --no-fund --loglevel=error >/dev/null)
rm .image/package.json .image/package-lock.json
echo "image context ready: .image/ ($(du -sh .image | cut -f1))"
