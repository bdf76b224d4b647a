# roundwise GitHub App server: `docker build -t roundwise . && docker run -p 8080:8080 \
#   -e GITHUB_APP_ID=... -e GITHUB_PRIVATE_KEY_PATH=/secrets/app.pem -e GITHUB_WEBHOOK_SECRET=... \
#   -v roundwise-data:/data -v /path/to/secrets:/secrets:ro roundwise`
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    LITELLM_LOCAL_MODEL_COST_MAP=True \
    ROUNDWISE_DB=/data/roundwise.db

RUN useradd --create-home --uid 10001 roundwise && mkdir /data && chown roundwise /data
WORKDIR /app
COPY pyproject.toml README.md ./
COPY tracker ./tracker
COPY bot ./bot
COPY bench ./bench
COPY roundwise ./roundwise
RUN pip install .

USER roundwise
VOLUME ["/data"]
EXPOSE 8080
HEALTHCHECK --interval=30s --timeout=5s --start-period=10s --retries=3 \
    CMD python -c "import urllib.request,sys; sys.exit(0 if urllib.request.urlopen('http://127.0.0.1:8080/healthz', timeout=4).status == 200 else 1)"
ENTRYPOINT ["roundwise", "serve", "--host", "0.0.0.0", "--port", "8080"]
