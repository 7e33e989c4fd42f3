#!/usr/bin/env bash
# Sets up everything ai-fix and its tests need on a Debian machine: the sandbox tools, a browser and a venv.
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
for cmd in podman runc bwrap busybox docker-registry curl openssl; do command -v "$cmd" >/dev/null 2>&1 || need+=("$cmd"); done
[ -x /usr/libexec/podman/catatonit ] || need+=(catatonit)  # podman --init: reaps orphans in the job's container
# PostgreSQL: the store and intake tests also run against a server they start (initdb and pg_ctl in a temp dir).
compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null || need+=(postgresql)
command -v mmdebstrap >/dev/null 2>&1 || need+=(mmdebstrap)  # scripts/build-image.sh makes the image's Debian base with it
[ -x /usr/bin/chromium ] || need+=(chromium)  # the run viewer's tests drive it headless through Playwright
# The corpus of real projects (tests/support/corpus.py): Go's toolchain, and a real crate and Go module from Debian
command -v go >/dev/null 2>&1 && [ -d /usr/share/cargo/registry/fnv-1.0.7 ] && [ -d /usr/share/gocode/src/github.com/google/go-cmp ] || need+=(golang-go)
if [ ${#need[@]} -gt 0 ] && command -v apt-get >/dev/null 2>&1; then
  sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  # docker-registry: a local image registry the pull tests start on loopback; postgresql: the store tests' server
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq podman runc bubblewrap busybox-static uidmap catatonit \
    chromium docker-registry postgresql mmdebstrap curl openssl golang-go librust-fnv-dev golang-github-google-go-cmp-dev >/dev/null
fi

[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip >/dev/null
.venv/bin/python -m pip install -q -e '.[test]'
# The real project the environment tests and bench/setup_cache.py use, pinned, into .cache/test-projects
.venv/bin/python -m tests.support.pypi_project >/dev/null
# The corpus's releases (PyPI sdists, an npm tarball), pinned, into .cache/corpus
.venv/bin/python -m tests.support.corpus >/dev/null
