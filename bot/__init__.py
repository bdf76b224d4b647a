"""The roundwise GitHub App: webhook server, jobs, GitHub client and review engine."""
