"""Example multi-round tasks bundled with roundwise, and the script that builds them."""
