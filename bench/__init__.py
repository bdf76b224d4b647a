"""Offline replay of multi-round review tasks (``mcr-task/1``) and their MCR-Bench scoring."""

import os

# litellm must not try to download its price list: machines running roundwise may be offline.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
