"""Tasks played through the real bot over HTTP, as each code host would drive it.

One harness per code host (``github`` against ``bench.fake_github``, ``gitlab`` against
``bench.fake_gitlab``), the webhook deliveries they sign (``payloads``) and what the bot
posted, kept per round (``posted``) and laid out as a pull request page (``conversation``).
"""

__all__ = ["conversation", "github", "gitlab", "payloads", "posted"]
