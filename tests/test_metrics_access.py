"""``GET /metrics`` names repositories in its labels: it answers a Bearer token, or with none
set only a scraper on the loopback address (issue 40 item 4)."""

from __future__ import annotations

from aiohttp.test_utils import make_mocked_request

from bot.server.app import metrics_refusal

from .server_kit import running_bot


async def test_a_scrape_without_the_token_is_refused_and_with_it_served(tmp_path, monkeypatch):
    monkeypatch.setenv("ROUNDWISE_METRICS_TOKEN", "s3cret-s3cret-s3cret")
    async with running_bot(tmp_path) as bot:
        url = f"{bot.url}/metrics"
        async with bot.session.get(url) as resp:
            assert resp.status == 401 and "roundwise_" not in await resp.text()
            assert resp.headers["WWW-Authenticate"].startswith("Bearer")
        async with bot.session.get(url, headers={"Authorization": "Bearer wrong"}) as resp:
            assert resp.status == 401
        async with bot.session.get(url, headers={
                "Authorization": "Bearer s3cret-s3cret-s3cret"}) as resp:
            assert resp.status == 200 and "roundwise_" in await resp.text()
    monkeypatch.delenv("ROUNDWISE_METRICS_TOKEN")
    async with running_bot(tmp_path / "b") as bot:  # no token: loopback is answered
        resp = await bot.session.get(f"{bot.url}/metrics")
        assert resp.status == 200
        resp.release()


def test_with_no_token_only_loopback_peers_are_answered(monkeypatch):
    monkeypatch.delenv("ROUNDWISE_METRICS_TOKEN", raising=False)

    def refused(peer: str):
        request = make_mocked_request("GET", "/metrics", transport=_Transport(peer))
        return metrics_refusal(request)

    assert refused("127.0.0.1") is None and refused("::1") is None
    answer = refused("10.1.2.3")
    assert answer is not None and answer.status == 403
    assert refused("203.0.113.9").status == 403


class _Transport:
    """A transport whose peer is ``peer`` (what aiohttp reads for ``request.remote``)."""

    def __init__(self, peer: str):
        self.peer = peer

    def get_extra_info(self, name, default=None):
        return (self.peer, 40000) if name == "peername" else default
