"""The roundwise GitHub App: webhook server, jobs, GitHub client and review engine."""

__all__ = ["app", "checks", "cli", "commands", "config", "forge", "github", "handlers", "jobs",
           "live", "local", "localgit", "metrics", "render", "review", "round", "settings",
           "stats", "summary"]
