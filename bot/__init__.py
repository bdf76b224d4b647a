"""The roundwise GitHub App: webhook server, jobs, GitHub client and review engine."""

__all__ = ["app", "cli", "commands", "config", "confine", "forced", "forge", "github",
           "handlers", "health", "jobs", "local", "localgit", "metrics", "render", "review",
           "round", "serving", "settings"]
