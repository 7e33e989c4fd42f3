# ai-fix serve in a small image, running as a non-root user.
#   docker build -t ai-fix . && docker run -p 127.0.0.1:8000:8000 -v ai-fix-data:/data --env-file ai-fix.env ai-fix
# BASE: any image with python3 (3.11+, with its venv module) and apt-get: python:3.12-slim, a mirror's copy
# of it, or Debian's own python3 (scripts/build-image.sh makes such a base locally, builds on it and checks it).
# ai-fix goes into a venv, so a distribution's Python (pip refuses to install into it) serves as well.
ARG BASE=python:3.12-slim
FROM ${BASE} AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY bot ./bot
RUN python3 -m venv /build && /build/bin/pip wheel --no-cache-dir --wheel-dir /wheels .

FROM ${BASE}
# git: the workers clone and push the repository they work on.
# bubblewrap + util-linux (setpriv, prlimit): the sandbox the checks run in (AIFIX_SANDBOX=auto finds
# it); the container needs user namespaces for it, e.g. `docker run --security-opt seccomp=unconfined`.
RUN apt-get update \
    && apt-get install -y --no-install-recommends git bubblewrap util-linux \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --create-home --uid 10001 aifix \
    && mkdir /data && chown aifix /data
COPY --from=build /wheels /wheels
RUN python3 -m venv /opt/ai-fix && /opt/ai-fix/bin/pip install --no-cache-dir --no-index /wheels/*.whl && rm -rf /wheels
USER aifix
WORKDIR /data
ENV PATH=/opt/ai-fix/bin:$PATH \
    AIFIX_DATABASE_URL=sqlite:////data/ai-fix.db \
    AIFIX_WORK_DIR=/data/work \
    PYTHONUNBUFFERED=1
VOLUME /data
EXPOSE 8000
HEALTHCHECK --interval=30s --timeout=3s \
    CMD python -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/healthz', timeout=2)"
CMD ["ai-fix", "serve", "--host", "0.0.0.0", "--port", "8000"]
