"""Offline replay of multi-round review tasks (``mcr-task/1``) and their MCR-Bench scoring."""

__all__ = ["aacr", "bench_ack", "bench_convergence", "bench_ledger", "bench_prompt_tokens",
           "bench_queue", "bench_replay", "bigdiff", "chaos", "cli", "context", "conversation",
           "diffs", "examples", "export", "export_cli", "fake_github", "fake_gitlab", "fit_tracking",
           "judge", "label_agreement", "learning_threshold", "load_cluster", "load_webhooks",
           "local_model", "metrics", "mine", "noisy_neighbour", "payloads", "posted", "progress",
           "provenance", "queue_drain", "queue_fill",
           "replay", "replay_gitlab", "report", "run", "scoring", "scripted_llm", "stateless",
           "tasks", "tracking", "tune_tracking"]
