#!/usr/bin/env bash
# Builds the Dockerfile with podman and checks the image: started, it answers /healthz, and stops cleanly.
#
# No image registry is reachable here, so the base is made locally from Debian's packages: mmdebstrap
# installs bookworm's python3 and python3-venv (and apt, which the Dockerfile uses) into a root that
# `podman import` turns into an image, carrying this machine's CA bundle so pip and apt inside the build
# trust what the host trusts. It is made once per machine (IMAGE_BASE names it; delete it to remake it).
# `ai-fix serve` asks GitHub for the App (GET /app) at start: a stub container answers, and the ai-fix
# container shares its network namespace, as a pod would. Settings: IMAGE_BASE, and IMAGE (what is built).
set -euo pipefail
cd "$(dirname "$0")/.."

base=${IMAGE_BASE:-localhost/ai-fix-base:bookworm}
image=${IMAGE:-localhost/ai-fix:check}
work=$(mktemp -d)
if [ -z "${CONTAINERS_CONF:-}" ]; then
  # The engine's default ulimits cannot be applied on some hosts (as in bot/sandbox/engine.py).
  printf '[containers]\ndefault_ulimits = []\n' >"$work/containers.conf"
  export CONTAINERS_CONF="$work/containers.conf"
fi
podman=(podman --runtime runc)
name="ai-fix-check-$$"
cleanup() {
  # The ai-fix container first (the stub's network namespace is in use until it is gone), with its /data volume.
  for container in "$name" "$name-github"; do "${podman[@]}" rm -f -v -t 0 "$container" >/dev/null 2>&1 || true; done
  rm -rf "$work"
}
trap cleanup EXIT

started=$SECONDS
if ! "${podman[@]}" image exists "$base"; then
  echo "making the base image $base from Debian's packages (mmdebstrap, once per machine)"
  mmdebstrap --quiet --variant=apt --include=python3,python3-venv,ca-certificates \
    --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-exclude=/usr/share/man/*' \
    --dpkgopt='path-exclude=/usr/share/locale/*' --aptopt='Acquire::Languages "none"' \
    --customize-hook='cp /etc/ssl/certs/ca-certificates.crt "$1/etc/ssl/host-ca.crt"' \
    bookworm - http://deb.debian.org/debian |
    "${podman[@]}" import --quiet --change 'ENV SSL_CERT_FILE=/etc/ssl/host-ca.crt' \
      --change 'ENV PIP_CERT=/etc/ssl/host-ca.crt' --change 'CMD ["/bin/bash"]' - "$base" >/dev/null
fi
echo "building $image on $base"
previous=$("${podman[@]}" image inspect --format '{{.Id}}' "$image" 2>/dev/null || true)
# docker format: OCI images have no HEALTHCHECK. Host network: the build's pip and apt reach their registries as the host does.
"${podman[@]}" build --quiet --format docker --network host --build-arg BASE="$base" -t "$image" . >/dev/null
if [ -n "$previous" ] && [ "$previous" != "$("${podman[@]}" image inspect --format '{{.Id}}' "$image")" ]; then
  "${podman[@]}" rmi "$previous" >/dev/null 2>&1 || true  # the last check's image, untagged now: no pile of them
fi
echo "base and image ready in $((SECONDS - started)) s; image size $("${podman[@]}" image inspect --format '{{.Size}}' "$image" | numfmt --to=iec)"

# The GitHub stub: GET /app names the App; it also publishes the port ai-fix serves on (the namespace is its).
mkdir "$work/github"
echo '{"id": 1, "slug": "ai-fix"}' >"$work/github/app"
"${podman[@]}" run -d --name "$name-github" -p 127.0.0.1::8000 -v "$work/github:/srv:ro" "$base" \
  python3 -m http.server 9000 --bind 127.0.0.1 --directory /srv >/dev/null
port=$("${podman[@]}" port "$name-github" 8000/tcp | head -1 | sed 's/.*://')  # a free port the engine chose
openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$work/app.pem" 2>/dev/null
chmod 644 "$work/app.pem"  # the image runs as a non-root user
"${podman[@]}" run -d --name "$name" --health-interval disable --network "container:$name-github" -v "$work/app.pem:/secrets/app.pem:ro" \
  -e AIFIX_APP_ID=1 -e AIFIX_PRIVATE_KEY_PATH=/secrets/app.pem -e AIFIX_WEBHOOK_SECRET="$(openssl rand -hex 32)" \
  -e AIFIX_ANTHROPIC_API_KEY=not-used-by-the-check -e AIFIX_GITHUB_API_URL=http://127.0.0.1:9000/ \
  "$image" >/dev/null 2>"$work/run.log" || { cat "$work/run.log" >&2; exit 1; }  # its CMD: ai-fix serve on 0.0.0.0:8000

for _ in $(seq 120); do
  answer=$(curl -s --max-time 2 "http://127.0.0.1:$port/healthz" || true)
  [ -n "$answer" ] && break
  if [ "$("${podman[@]}" inspect --format '{{.State.Running}}' "$name")" != true ]; then
    echo "ai-fix serve exited in the container:" >&2
    "${podman[@]}" logs "$name" >&2
    exit 1
  fi
  sleep 0.5
done
if [ "$answer" != '{"ok":true}' ]; then
  echo "GET /healthz answered '${answer:-nothing in 60 s}', expected {\"ok\":true}; the container's log:" >&2
  "${podman[@]}" logs "$name" >&2
  exit 1
fi
echo "GET /healthz through the published port: $answer"
"${podman[@]}" healthcheck run "$name" || { echo "the image's HEALTHCHECK failed" >&2; exit 1; }
echo "the image's HEALTHCHECK: healthy"
user=$("${podman[@]}" exec "$name" id -un)
[ "$user" = aifix ] || { echo "ai-fix runs as $user in the container, expected aifix" >&2; exit 1; }
# stderr aside: without systemd, podman logs that it cannot set up or remove the (disabled) healthcheck timer.
"${podman[@]}" stop -t 30 "$name" >/dev/null 2>"$work/stop.log" || { cat "$work/stop.log" >&2; exit 1; }
code=$("${podman[@]}" inspect --format '{{.State.ExitCode}}' "$name")
[ "$code" = 0 ] || { echo "ai-fix serve exited $code on SIGTERM, expected 0; its log:" >&2; "${podman[@]}" logs "$name" >&2; exit 1; }
echo "image check passed: served /healthz as $user, stopped on SIGTERM with exit 0 ($((SECONDS - started)) s in all)"
