"""Prometheus metrics the server exposes on ``GET /metrics``.

Module-level collectors in one registry of our own, so several apps in one process (tests,
the bench) do not collide with the default registry's process collectors.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

REGISTRY = CollectorRegistry(auto_describe=True)

DELIVERIES = Counter(
    "roundwise_webhook_deliveries_total", "Webhook deliveries received, by event and outcome",
    ["event", "outcome"], registry=REGISTRY,
)
QUEUE_DEPTH = Gauge(
    "roundwise_job_queue_depth", "Jobs waiting or running in the durable queue",
    registry=REGISTRY,
)
JOBS = Counter(
    "roundwise_jobs_total", "Jobs finished, by kind and outcome", ["kind", "outcome"],
    registry=REGISTRY,
)
ROUND_SECONDS = Histogram(
    "roundwise_round_duration_seconds", "Time to review one round of one PR",
    buckets=(0.1, 0.5, 1, 2, 5, 10, 30, 60, 120, 300, 600), registry=REGISTRY,
)
GITHUB_CALLS = Counter(
    "roundwise_github_api_calls_total", "GitHub API calls, by method and outcome",
    ["method", "outcome"], registry=REGISTRY,
)
LLM_TOKENS = Counter(
    "roundwise_llm_tokens_total", "LLM tokens used, by kind (prompt or completion)", ["kind"],
    registry=REGISTRY,
)

LLM_FAILURES = Counter(
    "roundwise_llm_failures_total", "Model calls that got no answer after their retries and the "
    "fallback model, by the last error", ["error"], registry=REGISTRY,
)


def render() -> bytes:
    return generate_latest(REGISTRY)
