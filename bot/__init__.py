"""The roundwise GitHub App: webhook server, jobs, GitHub client and review engine."""

__all__ = ["app", "cli", "commands", "config", "github", "handlers", "jobs", "local", "metrics", "render",
           "review", "rounds", "settings", "webhooks"]
