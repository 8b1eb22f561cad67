#!/usr/bin/env bash
# Builds the Dockerfile with buildah (no Docker engine here), runs the image's own entrypoint as
# its own user, and serves one request through it. No registry is reachable from the build, so:
#   - the base image is made locally from the shipped Node line (the pinned 26.x that
#     scripts/node-line.sh fetches; the Dockerfile's node:26 image) and the libraries it links;
#   - the build takes the Dockerfile's `prebuilt` path (`npm run image:prebuilt` fills .image/)
#     instead of `RUN npm ci`. The Dockerfile and .dockerignore are used as they are, from the
#     repository root; the image runs its default config, configured by environment only.
# Needs root and buildah (Debian: apt-get install buildah). CI=true makes their absence an error.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "$(id -u)" != "0" ] || ! command -v buildah >/dev/null 2>&1; then
  if [ -n "${CI:-}" ]; then echo "verify-image: needs root and buildah" >&2; exit 1; fi
  echo "verify-image: skipped (needs root and buildah)"; exit 0
fi

work=$(mktemp -d /tmp/leadgate-image.XXXXXX)
B=(buildah --root "$work/storage" --runroot "$work/run" --storage-driver vfs)
gw_pid=""; up_pid=""; ctr=""
cleanup() {
  [ -n "$gw_pid" ] && kill -9 "$gw_pid" 2>/dev/null || true
  [ -n "$up_pid" ] && kill "$up_pid" 2>/dev/null || true
  if [ -n "$ctr" ]; then "${B[@]}" umount "$ctr" >/dev/null 2>&1 || true; "${B[@]}" rm "$ctr" >/dev/null 2>&1 || true; fi
  "${B[@]}" rm --all >/dev/null 2>&1 || true
  rm -rf "$work" 2>/dev/null || true
}
trap cleanup EXIT

node_bin=$(scripts/node-line.sh 26)
export PATH="$(dirname "$node_bin"):$PATH"
echo "== base image from $node_bin ($(node --version))"
rootfs="$work/rootfs"
mkdir -p "$rootfs"/{usr/local/bin,etc,tmp} && chmod 1777 "$rootfs/tmp"
cp "$(readlink -f "$node_bin")" "$rootfs/usr/local/bin/node"
for lib in $(ldd "$node_bin" | grep -o '/[^ ]*'); do
  mkdir -p "$rootfs$(dirname "$lib")"; cp -L "$lib" "$rootfs$lib"
done
printf 'root:x:0:0:root:/root:/sbin/nologin\nnode:x:1000:1000:node:/home/node:/sbin/nologin\n' > "$rootfs/etc/passwd"
printf 'root:x:0:\nnode:x:1000:\n' > "$rootfs/etc/group"
base=$("${B[@]}" from scratch)
"${B[@]}" copy "$base" "$rootfs" / >/dev/null
"${B[@]}" config --env PATH=/usr/local/bin:/usr/bin:/bin "$base"
"${B[@]}" commit --quiet "$base" localhost/leadgate-node-base:verify >/dev/null
"${B[@]}" rm "$base" >/dev/null

echo "== build context: the repository, with the offline path's .image/ (npm run image:prebuilt)"
bash scripts/image-context.sh

echo "== buildah bud"
"${B[@]}" bud --quiet --isolation chroot --pull-never --skip-unused-stages=true \
  --build-arg NODE_IMAGE=localhost/leadgate-node-base:verify --build-arg COMPILED=prebuilt \
  -t localhost/leadgate:verify -f Dockerfile . >/dev/null
"${B[@]}" inspect --type image --format '{{.OCIv1.Config.User}} {{.OCIv1.Config.Entrypoint}} {{.OCIv1.Config.Cmd}} {{.OCIv1.Config.StopSignal}}{{println}}' localhost/leadgate:verify
size=$("${B[@]}" images --format '{{.Size}}' localhost/leadgate:verify)
echo "image size: $size"

echo "== run the image's entrypoint as its user, behind an echo upstream"
up_port=$(node -e "const s=require('net').createServer();s.listen(0,'127.0.0.1',()=>{console.log(s.address().port);s.close()})")
node --input-type=module -e "import('$PWD/dist/src/example/echo-upstream.js').then(m=>m.startEchoUpstream($up_port))" &
up_pid=$!
ctr=$("${B[@]}" from --pull-never localhost/leadgate:verify)
mnt=$("${B[@]}" mount "$ctr")
# the image as shipped: its default config, everything from the environment
cmp -s "$mnt/etc/leadgate/gateway.yaml" config/container.yaml || { echo "the image does not hold config/container.yaml"; exit 1; }
user=$("${B[@]}" inspect --type image --format '{{.OCIv1.Config.User}}' localhost/leadgate:verify)
mapfile -t argv < <("${B[@]}" inspect --type image --format '{{range .OCIv1.Config.Entrypoint}}{{println .}}{{end}}{{range .OCIv1.Config.Cmd}}{{println .}}{{end}}' localhost/leadgate:verify | sed '/^$/d')
mapfile -t envs < <("${B[@]}" inspect --type image --format '{{range .OCIv1.Config.Env}}{{println .}}{{end}}' localhost/leadgate:verify | sed '/^$/d')
key="sk_verify_image_$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')"
secret="$(od -An -N32 -tx1 /dev/urandom | tr -d ' \n')"
key_sha256=$(printf '%s' "$key" | sha256sum | cut -d' ' -f1)
examples=(LEADGATE_UPSTREAM_URL="http://127.0.0.1:$up_port" LEADGATE_API_KEY_SHA256="$key_sha256" LEADGATE_SIGNING_SECRET="$secret")
log="$work/gateway.log"
(cd "$mnt" && exec env -i "${envs[@]}" "${examples[@]}" "$(command -v chroot)" --userspec="$user" "$mnt" "${argv[@]}") > "$log" 2>&1 &
gw_pid=$!
for _ in $(seq 1 100); do grep -q '"leadgate ready"' "$log" && break; sleep 0.1; done
grep -q '"leadgate ready"' "$log" || { echo "no ready line:"; cat "$log"; exit 1; }
api=$(grep '"leadgate ready"' "$log" | sed 's/.*"listen":"[^"]*:\([0-9]*\)".*/\1/')
answer=$(KEY="$key" SECRET="$secret" node --input-type=module -e "
const { signLeadToken } = await import('$PWD/dist/src/client/index.js');
const r = await fetch('http://127.0.0.1:$api/api/v2/merchant/orders', { headers: {
  'x-apikey': process.env.KEY, 'x-source': 'web', 'x-leadtoken': signLeadToken(process.env.SECRET, 'lead-7') } });
const b = await r.json(); console.log(r.status, b.key_name, b.lead_id);")
echo "request through the image: $answer"
[ "$answer" = "200 storefront lead-7" ] || { cat "$log"; exit 1; }
kill -TERM "$gw_pid"
wait "$gw_pid"; code=$?
gw_pid=""
echo "exit after SIGTERM: $code"
[ "$code" = "0" ]
echo "verify-image: ok"
