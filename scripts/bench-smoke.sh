#!/usr/bin/env bash
# CI: every benchmark in bench/ on a tiny input (`--smoke`), so a bench that no longer runs fails CI. A script is
# a benchmark when it runs as a program (`if __name__ == "__main__":`); the others are modules they share.
set -euo pipefail
cd "$(dirname "$0")/.."
for script in bench/*.py; do
  grep -q '^if __name__ == "__main__":' "$script" || continue
  began=$SECONDS
  if ! out=$(timeout 600 .venv/bin/python "$script" --smoke 2>&1); then
    printf '%s\n' "$out"
    echo "bench-smoke: $script --smoke failed; run it to see why" >&2
    exit 1
  fi
  echo "bench-smoke: $script --smoke ok in $((SECONDS - began)) s"
done
