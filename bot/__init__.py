"""The roundwise GitHub App: webhook server, jobs, GitHub client and review engine."""

__all__ = ["app", "appkeys", "cli", "commands", "config", "disconnects", "envfile", "forge",
           "github", "handlers", "home", "jobs", "local", "localgit", "logs", "metrics", "render",
           "review", "round", "sarif", "settings", "setup", "startup", "textreport"]
