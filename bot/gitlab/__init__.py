"""The GitLab backend: merge requests reviewed as pull requests are, behind the same forge port.

``settings`` (``GITLAB_TOKEN``, ``GITLAB_URL``, the hook secrets), ``client`` (REST v4 through
gidgetlab, with retries), ``errors`` (the typed tree), ``diffs`` (GitLab's diff entries and
positions), ``ids`` (how MRs and notes are named in the shared ledger), ``forge``
(``GitLabForge``), ``webhooks`` (``POST /gitlab/webhook``), ``jobs`` (GitLab's jobs before the
host-neutral handlers), ``service`` (what the server mounts), ``startup`` (the instance and
token checked before ``serve`` listens) and ``host`` (its entry in ``bot.server.hosts``).
"""

from .client import GitLabClient, ProjectClient
from .forge import GitLabForge
from .service import GitLabService, mount
from .settings import SETTINGS as GITLAB_SETTINGS
from .settings import GitLabConfig

__all__ = ["GITLAB_SETTINGS", "GitLabClient", "GitLabConfig", "GitLabForge", "GitLabService",
           "ProjectClient", "client", "diffs", "errors", "forge", "host", "ids", "jobs", "mount",
           "service", "settings", "startup", "webhooks"]
