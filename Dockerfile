# roundwise GitHub App server, server dependencies only (no bench extra).
#   docker build -t roundwise .
#   docker compose up -d            # docker-compose.yml: one server, the ledger on a named volume
# or: docker run -p 8080:8080 --env-file .env -v roundwise-data:/data roundwise
#
# The base is pinned to Python 3.11 on Debian 12; pin it by digest for reproducible builds:
#   docker buildx imagetools inspect python:3.11-slim-bookworm      # prints the index digest
#   docker build --build-arg PYTHON_BASE=python:3.11-slim-bookworm@sha256:<digest> -t roundwise .
ARG PYTHON_BASE=python:3.11-slim-bookworm

# -- build: a virtualenv with the dependencies, then roundwise itself -----------------------------
FROM ${PYTHON_BASE} AS build
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
RUN python -m venv /opt/roundwise
# Dependencies first, from pyproject.toml alone: a code change does not reinstall them.
COPY pyproject.toml ./
RUN python -c "import tomllib; print('\n'.join(tomllib.load(open('pyproject.toml', 'rb'))['project']['dependencies']))" > requirements.txt \
    && /opt/roundwise/bin/pip install --no-compile -r requirements.txt
COPY README.md ./
COPY tracker ./tracker
COPY bot ./bot
COPY bench ./bench
COPY roundwise ./roundwise
RUN /opt/roundwise/bin/pip install --no-compile --no-deps . \
    && find /opt/roundwise -name "__pycache__" -type d -prune -exec rm -rf {} +

# -- run: the virtualenv on a clean base, as an unprivileged user ---------------------------------
FROM ${PYTHON_BASE}
ENV PATH=/opt/roundwise/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    LITELLM_LOCAL_MODEL_COST_MAP=True \
    ROUNDWISE_DB=/data/roundwise.db
RUN useradd --create-home --uid 10001 roundwise && mkdir /data && chown 10001:10001 /data
COPY --from=build /opt/roundwise /opt/roundwise
USER 10001:10001
WORKDIR /home/roundwise
VOLUME ["/data"]
EXPOSE 8080
HEALTHCHECK --interval=30s --timeout=5s --start-period=10s --retries=3 \
    CMD ["python", "-c", "import urllib.request,sys; sys.exit(urllib.request.urlopen('http://127.0.0.1:8080/healthz', timeout=4).status != 200)"]
ENTRYPOINT ["roundwise", "serve", "--host", "0.0.0.0", "--port", "8080"]
