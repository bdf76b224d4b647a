"""Example multi-round tasks bundled with roundwise, and the script that builds them."""

__all__ = ["build_examples"]
