"""Offline replay of multi-round review tasks (``mcr-task/1``) and their MCR-Bench scoring."""
