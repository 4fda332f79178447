"""Benchmark: pulling a cloud video into the cache vs boto3's own download_file, side by side.

Starts a moto S3 server on 127.0.0.1, uploads one random object (100 MB by default), then
alternates rounds of `boto3 download_file` and `assay.video.cloud_store.materialize` (cold cache each
round: download, SHA-256 check, atomic install, verification record) and prints medians.

    python benchmarks/store_pull.py [--size-mb 100] [--rounds 5]

Needs `pip install "moto[server]" boto3`.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import boto3

from assay.video.model import RemoteVideo, VideoStoreConfig
from assay.video.cloud_store import cached_video_path, materialize

BUCKET = "bench-videos"
KEY = "bench/clip.mp4"


def _start_moto() -> tuple[subprocess.Popen, str]:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 30
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return process, f"http://127.0.0.1:{port}"
        except OSError:
            if time.monotonic() > deadline:
                process.terminate()
                raise SystemExit("moto server did not start")
            time.sleep(0.05)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mb", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=5)
    options = parser.parse_args()

    workdir = Path(tempfile.mkdtemp(prefix="assay-store-bench-"))
    os.environ["ASSAY_CACHE_DIR"] = str(workdir / "cache")
    os.environ["BENCH_ACCESS_KEY_ID"] = "bench"
    os.environ["BENCH_SECRET_ACCESS_KEY"] = "bench"
    process, endpoint = _start_moto()
    try:
        client = boto3.client(
            "s3", endpoint_url=endpoint, aws_access_key_id="bench", aws_secret_access_key="bench",
            region_name="us-east-1",
        )
        client.create_bucket(Bucket=BUCKET)
        data = os.urandom(options.size_mb * 1024 * 1024)
        client.put_object(Bucket=BUCKET, Key=KEY, Body=data)
        ref = RemoteVideo(store="bench", key=KEY, sha256=hashlib.sha256(data).hexdigest())
        del data
        store = VideoStoreConfig(
            name="bench", bucket=BUCKET, endpoint_url=endpoint,
            access_key_id_env="BENCH_ACCESS_KEY_ID", secret_access_key_env="BENCH_SECRET_ACCESS_KEY",
        )
        cached = cached_video_path(ref)
        plain_target = workdir / "plain.mp4"

        # warm-up: both paths once (client construction, moto's first-request costs)
        client.download_file(BUCKET, KEY, str(plain_target))
        materialize(ref, store)

        plain_times: list[float] = []
        assay_times: list[float] = []
        for _ in range(options.rounds):
            plain_target.unlink(missing_ok=True)
            started = time.perf_counter()
            client.download_file(BUCKET, KEY, str(plain_target))
            plain_times.append(time.perf_counter() - started)

            shutil.rmtree(cached.parent)
            started = time.perf_counter()
            assert materialize(ref, store) == cached
            assay_times.append(time.perf_counter() - started)

        started = time.perf_counter()
        materialize(ref, store)
        reuse_s = time.perf_counter() - started
    finally:
        process.terminate()
        process.wait(timeout=10)
        shutil.rmtree(workdir, ignore_errors=True)

    megabytes = options.size_mb * 1024 * 1024 / 1e6
    plain = statistics.median(plain_times)
    assay = statistics.median(assay_times)
    print(f"object: {options.size_mb} MiB from moto on 127.0.0.1, {options.rounds} alternating rounds, medians")
    print(f"boto3 download_file : {plain:6.3f} s  {megabytes / plain:7.1f} MB/s  (all: {_seconds(plain_times)})")
    print(f"assay materialize   : {assay:6.3f} s  {megabytes / assay:7.1f} MB/s  (all: {_seconds(assay_times)})")
    print(f"throughput ratio    : {plain / assay:6.1%} of download_file")
    print(f"verified reuse      : {reuse_s * 1000:6.2f} ms")


def _seconds(values: list[float]) -> str:
    return ", ".join(f"{value:.2f}" for value in values)


if __name__ == "__main__":
    main()
