"""The roundwise GitHub App: webhook server, jobs, GitHub client and review engine."""

__all__ = ["app", "checks", "cli", "commands", "config", "confine", "forced", "forge",
           "github", "handlers", "health", "jobs", "live", "local", "localgit", "metrics",
           "render", "review", "round", "serving", "settings", "stats", "summary"]
