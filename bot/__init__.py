"""The roundwise GitHub App: webhook server, jobs, GitHub client and review engine."""

__all__ = ["app", "cli", "commands", "config", "forge", "github", "handlers", "jobs", "live",
           "local", "localgit", "metrics", "render", "review", "round", "settings", "stats"]
