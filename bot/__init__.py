"""The roundwise GitHub App: webhook server, jobs, GitHub client and review engine."""

import os

# litellm must not try to download its price list: machines running roundwise may be offline.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
