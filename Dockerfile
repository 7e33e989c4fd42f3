# ai-fix serve in a small image, running as a non-root user.
#   docker build -t ai-fix . && docker run -p 8000:8000 -v ai-fix-data:/data --env-file ai-fix.env ai-fix
# BASE: any image with Python 3.11+, pip and apt-get (a mirror's copy of python:3.12-slim, or one built locally).
ARG BASE=python:3.12-slim
FROM ${BASE} AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY bot ./bot
RUN pip wheel --no-cache-dir --wheel-dir /wheels .

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
RUN pip install --no-cache-dir /wheels/*.whl && rm -rf /wheels
USER aifix
WORKDIR /data
ENV AIFIX_DATABASE_URL=sqlite:////data/ai-fix.db \
    AIFIX_WORK_DIR=/data/work \
    PYTHONUNBUFFERED=1
VOLUME /data
EXPOSE 8000
HEALTHCHECK --interval=30s --timeout=3s \
    CMD python -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/healthz', timeout=2)"
CMD ["ai-fix", "serve", "--host", "0.0.0.0", "--port", "8000"]
