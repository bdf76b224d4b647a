"""GitLab's signing-token route under a flood of unverified bodies, in a real ``roundwise serve``.

With ``GITLAB_WEBHOOK_SIGNING_TOKEN`` set, a hook carrying only ``webhook-signature`` is not
authenticated until its body is whole. Twenty concurrent 24 MB bodies with a wrong signature
(from another process) keep the server's peak RSS (``VmHWM``) under 200 MB: they are spooled to
disk as they are hashed, and past 16 from one address refused at once (429); five 24 MB
deliveries with the right token are then read and parsed and the memory goes back (RSS within
50 MB of the start); ``/healthz`` answers throughout.
"""

from __future__ import annotations

import asyncio
import base64
import json
import sys
import uuid

from bench.fake_gitlab import FakeGitLab

from .test_gitlab_startup import _serve, gitlab_env
from .test_memory import peak_rss_mb

FLOOD = """
import asyncio, json, sys, time
import aiohttp

async def main(url):
    big = b'{"object_kind": "note", "pad": "' + b"x" * (24 * 1024 * 1024 - 40) + b'"}'
    headers = {"X-Gitlab-Event": "Note Hook", "X-Gitlab-Event-UUID": "u", "webhook-id": "m",
               "webhook-timestamp": str(int(time.time())), "webhook-signature": "v1,AAAA"}
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=60)) as session:
        async def one():
            try:
                async with session.post(url, data=big, headers=headers) as resp:
                    return resp.status
            except aiohttp.ClientError:
                return 0  # the server may close a refused upload early
        print("go", flush=True)
        print(json.dumps(await asyncio.gather(*[one() for _ in range(20)])))

asyncio.run(main(sys.argv[1]))
"""


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as fh:
        line = next(x for x in fh if x.startswith("VmRSS:"))
    return int(line.split()[1]) / 1024


async def test_unverified_floods_stay_small_and_big_deliveries_are_freed(tmp_path):
    import aiohttp

    fake = FakeGitLab(token="glpat-good")
    await fake.start()
    env = {**gitlab_env(tmp_path, fake.url),
           "GITLAB_WEBHOOK_SIGNING_TOKEN": "whsec_" + base64.b64encode(b"k" * 32).decode()}
    proc = await _serve(env, tmp_path)
    try:
        line = ""
        while " ready on " not in line:
            line = (await asyncio.wait_for(proc.stderr.readline(), 60)).decode()
            assert line, "the server exited"
        base = line.split("ready on ")[1].split(": ")[0]
        start = rss_mb(proc.pid)
        flooder = await asyncio.create_subprocess_exec(
            sys.executable, "-c", FLOOD, f"{base}/gitlab/webhook",
            stdout=asyncio.subprocess.PIPE)
        assert await flooder.stdout.readline() == b"go\n"
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=60)) as session:
            async with session.get(f"{base}/healthz") as resp:
                assert resp.status == 200  # while the flood arrives
            statuses = json.loads(await asyncio.wait_for(flooder.stdout.read(), 90))
            await flooder.wait()
            assert set(statuses) <= {401, 408, 429, 0} and 401 in statuses
            flood_peak = peak_rss_mb(proc.pid)
            big = b'{"object_kind": "note", "pad": "' + b"x" * (24 * 1024 * 1024 - 40) + b'"}'
            for _ in range(5):  # authenticated by the token: read whole, parsed, refused 400
                async with session.post(f"{base}/gitlab/webhook", data=big, headers={
                        "X-Gitlab-Event": "Note Hook", "X-Gitlab-Token": "hook-secret",
                        "X-Gitlab-Event-UUID": str(uuid.uuid4())}) as resp:
                    assert resp.status == 400
            await asyncio.sleep(0.5)
            after = rss_mb(proc.pid)
            async with session.get(f"{base}/healthz") as resp:
                assert resp.status == 200
        print(f"RSS {start:.0f} MB at start, flood peak {flood_peak:.0f} MB, "
              f"{after:.0f} MB after five 24 MB verified deliveries")
        assert flood_peak < 200
        assert after < start + 50
    finally:
        proc.terminate()
        await proc.wait()
        await fake.stop()
