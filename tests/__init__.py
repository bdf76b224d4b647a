"""roundwise tests: real servers on loopback, real SQLite files, real diffs."""
