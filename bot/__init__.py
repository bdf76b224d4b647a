"""The roundwise GitHub App: webhook server, jobs, GitHub client and review engine."""

__all__ = ["app", "appkeys", "bounds", "checks", "cli", "commands", "config", "confine", "dbcli",
           "disconnects", "envfile", "fixpatch", "forced", "forge", "github", "gitlab", "handlers", "health", "home",
           "jobs", "live", "local", "localgit", "logs", "metrics", "overview", "render", "retention",
           "review", "round", "sarif", "serving", "settings", "setup", "startup", "stats",
           "store", "summary", "surfaces", "tempclean", "textreport", "unverified"]
