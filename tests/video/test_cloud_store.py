"""Cloud video stores against real servers: a moto S3 server process and a loopback HTTP server.

Covers the download cache (verify, reuse, rehash, lock, atomic install), uploads, pruning and the CLI.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import socket
import stat
import subprocess
import sys
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

boto3 = pytest.importorskip("boto3")
pytest.importorskip("moto")

from typer.testing import CliRunner

from assay.cli.video import store_app
from assay.video import cloud_store as video_store
from assay.video.model import RemoteVideo, VideoStoreConfig
from assay.video.cloud_store import (
    VideoStoreError,
    cache_root,
    format_bytes,
    materialize,
    prune_cache,
)

BUCKET = "team-videos"
ACCESS_ENV = "TEST_STORE_ACCESS_KEY_ID"
SECRET_ENV = "TEST_STORE_SECRET_ACCESS_KEY"
SRC = Path(__file__).resolve().parents[2] / "src"


# --- servers -------------------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _closed_port() -> int:
    return _free_port()  # nothing listens there once the probe socket is closed


@dataclass
class MotoServer:
    endpoint: str
    access_key_id: str
    secret_access_key: str

    def client(self):
        return boto3.client(
            "s3",
            endpoint_url=self.endpoint,
            aws_access_key_id=self.access_key_id,
            aws_secret_access_key=self.secret_access_key,
            region_name="us-east-1",
        )


@pytest.fixture(scope="module")
def moto_server():
    """A moto server that checks credentials: an IAM user is made first, then auth is switched on."""
    port = _free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                if time.monotonic() > deadline or process.poll() is not None:
                    raise RuntimeError("moto server did not start")
                time.sleep(0.05)
        endpoint = f"http://127.0.0.1:{port}"
        iam = boto3.client(
            "iam", endpoint_url=endpoint, aws_access_key_id="setup", aws_secret_access_key="setup",
            region_name="us-east-1",
        )
        iam.create_user(UserName="tester")
        key = iam.create_access_key(UserName="tester")["AccessKey"]
        allow_all = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}
        iam.put_user_policy(UserName="tester", PolicyName="all", PolicyDocument=json.dumps(allow_all))
        urllib.request.urlopen(
            urllib.request.Request(
                f"{endpoint}/moto-api/reset-auth", data=b"0", method="POST", headers={"Content-Type": "text/plain"}
            )
        ).read()
        server = MotoServer(endpoint, key["AccessKeyId"], key["SecretAccessKey"])
        server.client().create_bucket(Bucket=BUCKET)
        yield server
    finally:
        process.terminate()
        process.wait(timeout=10)


@dataclass
class PublicServer:
    base_url: str
    objects: dict[str, bytes] = field(default_factory=dict)
    requests: list[tuple[str, dict[str, str]]] = field(default_factory=list)
    delay_s: float = 0.0


@pytest.fixture(scope="module")
def public_server():
    state = PublicServer(base_url="")

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            state.requests.append((self.path, dict(self.headers)))
            body = state.objects.get(self.path)
            if body is None:
                self.send_error(404, "Not Found")
                return
            time.sleep(state.delay_s)
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    state.base_url = f"http://127.0.0.1:{server.server_address[1]}/pub/"
    yield state
    server.shutdown()
    server.server_close()


# --- per-test setup -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def video_bytes(tmp_path_factory) -> bytes:
    from media import make_numbered_video

    path = make_numbered_video(tmp_path_factory.mktemp("media") / "clip.mp4", 8, fps=8)
    return path.read_bytes()


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    root = tmp_path / "cache"
    monkeypatch.delenv("ASSAY_CACHE_DIR", raising=False)
    monkeypatch.setenv("GLASSKIT_EVAL_CACHE_DIR", str(root))
    return root


@pytest.fixture
def credentials(moto_server, monkeypatch) -> None:
    monkeypatch.setenv(ACCESS_ENV, moto_server.access_key_id)
    monkeypatch.setenv(SECRET_ENV, moto_server.secret_access_key)


def _store(moto_server: MotoServer, **changes) -> VideoStoreConfig:
    settings = {
        "name": "team", "bucket": BUCKET, "endpoint_url": moto_server.endpoint,
        "access_key_id_env": ACCESS_ENV, "secret_access_key_env": SECRET_ENV,
    }
    settings.update(changes)
    return VideoStoreConfig(**settings)


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _put(moto_server: MotoServer, key: str, data: bytes, sha256: str | None = None) -> RemoteVideo:
    moto_server.client().put_object(Bucket=BUCKET, Key=key, Body=data, Metadata={"sha256": sha256 or _sha256(data)})
    return RemoteVideo(store="team", key=key, sha256=_sha256(data))


def _files_under(root: Path) -> list[Path]:
    return sorted(path for path in root.rglob("*") if path.is_file()) if root.exists() else []


def _refused_store(moto_server: MotoServer) -> VideoStoreConfig:
    return _store(moto_server, endpoint_url=f"http://127.0.0.1:{_closed_port()}")


# --- cache root -------------------------------------------------------------------------------------


def test_assay_cache_dir_wins_over_glasskit_and_gets_a_videos_subdirectory(tmp_path, monkeypatch):
    monkeypatch.setenv("ASSAY_CACHE_DIR", str(tmp_path / "assay"))
    monkeypatch.setenv("GLASSKIT_EVAL_CACHE_DIR", str(tmp_path / "glasskit"))
    assert cache_root() == (tmp_path / "assay").resolve() / "videos"


def test_glasskit_cache_dir_is_the_video_cache_itself_expanded(tmp_path, monkeypatch):
    monkeypatch.delenv("ASSAY_CACHE_DIR", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("GLASSKIT_EVAL_CACHE_DIR", "~/gk")
    assert cache_root() == (tmp_path / "gk").resolve()


def test_default_cache_root_follows_xdg_cache_home(tmp_path, monkeypatch):
    monkeypatch.delenv("ASSAY_CACHE_DIR", raising=False)
    monkeypatch.delenv("GLASSKIT_EVAL_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    if sys.platform.startswith("linux"):
        assert cache_root() == tmp_path / "xdg" / "assay" / "videos"
        monkeypatch.delenv("XDG_CACHE_HOME")
        monkeypatch.setenv("HOME", str(tmp_path))
        assert cache_root() == tmp_path / ".cache" / "assay" / "videos"


def test_format_bytes_uses_binary_units_with_one_decimal():
    assert [format_bytes(n) for n in (0, 1023, 66458, 1258291)] == ["0 B", "1023 B", "64.9 KiB", "1.2 MiB"]


# --- download, verify, reuse --------------------------------------------------------------------------


def test_download_installs_verified_private_file_and_record(moto_server, credentials, cache, video_bytes):
    ref = _put(moto_server, "clips/Intro.MP4", video_bytes)
    path = materialize(ref, _store(moto_server))
    assert path == cache.resolve() / "sha256" / ref.sha256[:2] / f"{ref.sha256}.mp4"
    assert path.read_bytes() == video_bytes
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert stat.S_IMODE((cache / "sha256").stat().st_mode) == 0o700
    record = json.loads((path.parent / f".{path.name}.verified.json").read_text())
    assert record == {"mtime_ns": path.stat().st_mtime_ns, "sha256": ref.sha256, "size": len(video_bytes)}
    assert [p.name for p in _files_under(cache)] == [f".{path.name}.verified.json", path.name]


def test_verified_copy_is_reused_without_download_or_rehash(moto_server, credentials, cache, video_bytes, monkeypatch):
    ref = _put(moto_server, "reuse.mp4", video_bytes)
    first = materialize(ref, _store(moto_server))

    def no_rehash(path):
        raise AssertionError("rehashed a verified file")

    monkeypatch.setattr(video_store, "sha256_file", no_rehash)
    assert materialize(ref, _refused_store(moto_server)) == first


def test_record_mismatch_rehashes_and_rerecords(moto_server, credentials, cache, video_bytes):
    ref = _put(moto_server, "touched.mp4", video_bytes)
    path = materialize(ref, _store(moto_server))
    os.utime(path, ns=(1_000_000_000, 1_000_000_000))
    assert materialize(ref, _refused_store(moto_server)) == path  # the rehash matched; no download
    record = json.loads((path.parent / f".{path.name}.verified.json").read_text())
    assert record["mtime_ns"] == 1_000_000_000


def test_corrupted_cached_copy_is_deleted_and_downloaded_again(moto_server, credentials, cache, video_bytes):
    ref = _put(moto_server, "corrupt.mp4", video_bytes)
    path = materialize(ref, _store(moto_server))
    path.write_bytes(b"x" * len(video_bytes))
    assert materialize(ref, _store(moto_server)).read_bytes() == video_bytes


def test_checksum_mismatch_removes_download_and_installs_nothing(moto_server, credentials, cache, video_bytes):
    ref = _put(moto_server, "wrong.mp4", video_bytes)
    declared = "0" * 64
    with pytest.raises(VideoStoreError) as caught:
        materialize(RemoteVideo("team", "wrong.mp4", declared), _store(moto_server))
    assert str(caught.value) == f"downloaded video 'team:wrong.mp4' has SHA-256 {ref.sha256}, expected {declared}"
    assert _files_under(cache) == []


# --- lock --------------------------------------------------------------------------------------------


def _live_lock(path: Path) -> int:
    """`path` written as a live owner's lock: its pid, and the file's flock held (as `LockFile` owners hold it while
    they run) until the returned descriptor is closed. A pid alone is not an owner: pids are reused."""
    import fcntl

    path.write_text(f"{os.getpid()}\n")
    descriptor = os.open(path, os.O_RDONLY)
    fcntl.flock(descriptor, fcntl.LOCK_EX)
    return descriptor


def _dead_pid() -> int:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def test_lock_of_a_dead_process_is_broken(moto_server, credentials, cache, video_bytes):
    ref = _put(moto_server, "stale-lock.mp4", video_bytes)
    target = video_store.cached_video_path(ref)
    target.parent.mkdir(parents=True)
    (target.parent / f".{target.name}.lock").write_text(f"{_dead_pid()}\n")
    assert materialize(ref, _store(moto_server)).read_bytes() == video_bytes
    assert not (target.parent / f".{target.name}.lock").exists()


def test_waiting_for_a_live_lock_times_out_with_its_path(moto_server, credentials, cache, video_bytes, monkeypatch):
    ref = _put(moto_server, "held.mp4", video_bytes)
    target = video_store.cached_video_path(ref)
    target.parent.mkdir(parents=True)
    lock = target.parent / f".{target.name}.lock"
    owner = _live_lock(lock)
    monkeypatch.setattr(video_store, "LOCK_WAIT_TIMEOUT_S", 0.3)
    with pytest.raises(VideoStoreError) as caught:
        try:
            materialize(ref, _store(moto_server))
        finally:
            os.close(owner)
    assert str(caught.value) == f"timed out waiting for video cache lock: {lock}"
    assert lock.exists() and not target.exists()


_MATERIALIZE_SCRIPT = """
import sys
from assay.video.model import RemoteVideo, VideoStoreConfig
from assay.video.cloud_store import materialize
store = VideoStoreConfig(name="pub", bucket="unused", public_base_url=sys.argv[1])
print(materialize(RemoteVideo("pub", sys.argv[2], sys.argv[3]), store))
"""


def test_two_processes_fetching_the_same_video_download_it_once(public_server, cache, video_bytes):
    public_server.objects["/pub/shared.mp4"] = video_bytes
    public_server.delay_s = 0.6  # long enough that the second process arrives mid-download
    sha256 = _sha256(video_bytes)
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    try:
        processes = [
            subprocess.Popen(
                [sys.executable, "-c", _MATERIALIZE_SCRIPT, public_server.base_url, "shared.mp4", sha256],
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
            )
            for _ in range(2)
        ]
        outputs = [process.communicate(timeout=30) for process in processes]
    finally:
        public_server.delay_s = 0.0
    assert [process.returncode for process in processes] == [0, 0], outputs
    paths = {stdout.strip() for stdout, _ in outputs}
    assert len(paths) == 1 and Path(paths.pop()).read_bytes() == video_bytes
    assert [path for path, _ in public_server.requests].count("/pub/shared.mp4") == 1
    assert not any(".lock" in p.name or ".part-" in p.name for p in _files_under(cache))


# --- public downloads ----------------------------------------------------------------------------------


def test_public_download_quotes_the_key_and_sends_no_credentials(public_server, cache, video_bytes, monkeypatch):
    monkeypatch.delenv(ACCESS_ENV, raising=False)  # named but unset: public reads never need it
    public_server.objects["/pub/dir/my%20clip.mp4"] = video_bytes
    store = VideoStoreConfig(
        name="pub", bucket="b", public_base_url=public_server.base_url.rstrip("/"),
        access_key_id_env=ACCESS_ENV, secret_access_key_env=SECRET_ENV,
    )
    path = materialize(RemoteVideo("pub", "dir/my clip.mp4", _sha256(video_bytes)), store)
    assert path.read_bytes() == video_bytes
    _, headers = [r for r in public_server.requests if r[0] == "/pub/dir/my%20clip.mp4"][-1]
    assert "Authorization" not in headers and headers["User-Agent"] == "assay"


def test_public_download_failure_names_the_url(public_server, cache):
    store = VideoStoreConfig(name="pub", bucket="b", public_base_url=public_server.base_url.rstrip("/"))
    with pytest.raises(VideoStoreError) as caught:
        materialize(RemoteVideo("pub", "missing.mp4", "a" * 64), store)
    url = f"{public_server.base_url}missing.mp4"
    assert str(caught.value) == f"could not download public video pub:missing.mp4 from {url}: HTTP Error 404: Not Found"
    assert _files_under(cache) == []


# --- S3 failures -------------------------------------------------------------------------------------------


def test_wrong_credentials_get_one_clear_line(moto_server, credentials, cache, video_bytes, monkeypatch):
    ref = _put(moto_server, "creds.mp4", video_bytes)
    monkeypatch.setenv(ACCESS_ENV, "AKIAWRONGWRONGWRONG0")
    with pytest.raises(VideoStoreError) as caught:
        materialize(ref, _store(moto_server))
    assert str(caught.value) == (
        f"video store 'team' rejected the credentials (InvalidAccessKeyId); check {ACCESS_ENV} and {SECRET_ENV}"
    )
    assert _files_under(cache) == []


def test_missing_bucket_is_named(moto_server, credentials, cache):
    with pytest.raises(VideoStoreError) as caught:
        materialize(RemoteVideo("team", "a.mp4", "b" * 64), _store(moto_server, bucket="no-such-bucket"))
    assert str(caught.value) == "bucket 'no-such-bucket' of video store 'team' does not exist"
    assert _files_under(cache) == []


def test_missing_object_is_named(moto_server, credentials, cache):
    with pytest.raises(VideoStoreError) as caught:
        materialize(RemoteVideo("team", "nothing/here.mp4", "c" * 64), _store(moto_server))
    assert str(caught.value) == f"video team:nothing/here.mp4 does not exist in bucket '{BUCKET}'"
    assert _files_under(cache) == []


def test_refused_connection_is_named(moto_server, credentials, cache):
    store = _refused_store(moto_server)
    with pytest.raises(VideoStoreError) as caught:
        materialize(RemoteVideo("team", "a.mp4", "d" * 64), store)
    assert str(caught.value).startswith(f"could not connect to video store 'team' at {store.endpoint_url}: ")
    assert "Connection refused" in str(caught.value)
    assert _files_under(cache) == []


def test_missing_credential_variable_is_named(moto_server, cache, monkeypatch):
    monkeypatch.setenv(ACCESS_ENV, "set")
    monkeypatch.setenv(SECRET_ENV, "")
    with pytest.raises(VideoStoreError) as caught:
        materialize(RemoteVideo("team", "a.mp4", "e" * 64), _store(moto_server))
    assert str(caught.value) == f"authenticated access to video store 'team' requires environment variable {SECRET_ENV}"


@pytest.fixture
def silent_endpoint():
    """An endpoint that accepts connections and never answers; `.connected` is set once one arrives."""
    listener = socket.create_server(("127.0.0.1", 0))
    connected = threading.Event()
    held: list[socket.socket] = []

    def accept() -> None:
        while True:
            try:
                held.append(listener.accept()[0])
            except OSError:
                return
            connected.set()

    threading.Thread(target=accept, daemon=True).start()
    yield f"http://127.0.0.1:{listener.getsockname()[1]}", connected
    listener.close()
    for connection in held:
        connection.close()


def test_an_endpoint_that_never_answers_fails_within_the_timeouts(moto_server, credentials, cache, silent_endpoint,
                                                                  monkeypatch):
    url, _ = silent_endpoint
    monkeypatch.setattr(video_store, "S3_READ_TIMEOUT_S", 0.5)
    monkeypatch.setattr(video_store, "S3_MAX_ATTEMPTS", 2)
    video_store._cached_s3_client.cache_clear()
    started = time.monotonic()
    with pytest.raises(VideoStoreError) as caught:
        materialize(RemoteVideo("team", "slow.mp4", "a" * 64), _store(moto_server, endpoint_url=url))
    assert time.monotonic() - started < 10
    assert str(caught.value).startswith("connection to video store 'team' failed while trying to download team:slow.mp4: ")
    assert "Read timeout" in str(caught.value)
    assert _files_under(cache) == []


def test_ctrl_c_stops_a_pull_from_a_stalled_endpoint_at_once(moto_server, credentials, cache, silent_endpoint, tmp_path):
    url, connected = silent_endpoint
    eval_dir = _eval_dir(tmp_path, MotoServer(url, "", ""), {"stalled": {"store": "team", "key": "k.mp4", "sha256": "b" * 64}})
    process = subprocess.Popen(
        [sys.executable, "-m", "assay", "video", "store", "pull", "--eval-dir", str(eval_dir)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(SRC)},
    )
    try:
        assert connected.wait(30), "the pull never reached the endpoint"
        time.sleep(0.3)
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=10)  # boto3's worker threads held it for minutes
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert (process.returncode, stderr) == (130, "Interrupted.\n")
    assert _files_under(cache) == []


# --- CLI: upload, pull, prune ------------------------------------------------------------------------------


def _eval_dir(tmp_path: Path, moto_server: MotoServer, cases: dict[str, object]) -> Path:
    import yaml

    eval_dir = tmp_path / "eval"
    (eval_dir / "cases").mkdir(parents=True)
    config = {
        "video_stores": {
            "team": {
                "bucket": BUCKET, "endpoint_url": moto_server.endpoint,
                "access_key_id_env": ACCESS_ENV, "secret_access_key_env": SECRET_ENV,
            }
        }
    }
    (eval_dir / "config.yaml").write_text(yaml.safe_dump(config))
    for name, video in cases.items():
        case = {"video": video, "targets": {"step": {"samples": [{"at": 0.5, "expect": True}]}}}
        (eval_dir / "cases" / f"{name}.yaml").write_text(yaml.safe_dump(case))
    return eval_dir


def _invoke(*args: str):
    return CliRunner().invoke(store_app, list(args), catch_exceptions=False)


def test_upload_prints_video_block_then_reuses_identical_object(moto_server, credentials, tmp_path, video_bytes):
    eval_dir = _eval_dir(tmp_path, moto_server, {})
    clip = tmp_path / "Recording.MP4"
    clip.write_bytes(video_bytes)
    sha256 = _sha256(video_bytes)
    block = f"video:\n  store: team\n  key: {sha256}.mp4\n  sha256: {sha256}\n"

    first = _invoke("upload", str(clip), "--store", "team", "--eval-dir", str(eval_dir))
    assert (first.exit_code, first.output) == (0, block)
    head = moto_server.client().head_object(Bucket=BUCKET, Key=f"{sha256}.mp4")
    assert head["Metadata"] == {"sha256": sha256} and head["ContentType"] == "video/mp4"

    second = _invoke("upload", str(clip), "--store", "team", "--eval-dir", str(eval_dir))
    assert (second.exit_code, second.output) == (0, "Object already exists with matching size and SHA-256.\n" + block)


def test_upload_refuses_to_overwrite_a_different_object(moto_server, credentials, tmp_path, video_bytes):
    eval_dir = _eval_dir(tmp_path, moto_server, {})
    moto_server.client().put_object(Bucket=BUCKET, Key="taken.mp4", Body=b"someone else's video")
    clip = tmp_path / "clip.mp4"
    clip.write_bytes(video_bytes)
    result = _invoke("upload", str(clip), "--store", "team", "--eval-dir", str(eval_dir), "--key", " taken.mp4 ")
    assert result.exit_code == 2
    assert result.output == "Could not upload cloud video: refusing to overwrite existing object team:taken.mp4\n"
    body = moto_server.client().get_object(Bucket=BUCKET, Key="taken.mp4")["Body"].read()
    assert body == b"someone else's video"


def test_upload_names_unknown_store_and_configured_ones(moto_server, tmp_path, video_bytes):
    eval_dir = _eval_dir(tmp_path, moto_server, {})
    clip = tmp_path / "clip.mp4"
    clip.write_bytes(video_bytes)
    result = _invoke("upload", str(clip), "--store", "other", "--eval-dir", str(eval_dir))
    assert result.exit_code == 2
    assert result.output == "Could not upload cloud video: unknown video store 'other'; configured stores: 'team'\n"


def test_upload_with_a_missing_eval_dir_names_it_without_a_traceback(moto_server, tmp_path, video_bytes):
    clip = tmp_path / "clip.mp4"
    clip.write_bytes(video_bytes)
    result = _invoke("upload", str(clip), "--store", "team", "--eval-dir", str(tmp_path / "evl"))
    assert (result.exit_code, result.output) == (
        2, f"Could not upload cloud video: eval directory does not exist: {(tmp_path / 'evl').resolve()}\n"
    )


def test_upload_whose_reader_leaves_after_uploading_is_not_stopped(moto_server, credentials, tmp_path, video_bytes,
                                                                  monkeypatch):
    from test_tools_reader_leaves import command_read_by_head

    from assay.video.store_commands import upload_lines

    eval_dir = _eval_dir(tmp_path, moto_server, {})
    clip = tmp_path / "reader.mp4"
    clip.write_bytes(video_bytes + b"reader")  # a new object: this one is really uploaded
    with command_read_by_head(monkeypatch) as (print_then_reader_leaves, interrupts):
        print_then_reader_leaves(upload_lines(clip, "team", eval_dir, None))
    assert interrupts == []


def test_upload_rejects_unsupported_suffix(moto_server, tmp_path):
    eval_dir = _eval_dir(tmp_path, moto_server, {})
    notes = tmp_path / "notes.txt"
    notes.write_text("not a video")
    result = _invoke("upload", str(notes), "--store", "team", "--eval-dir", str(eval_dir))
    assert result.exit_code == 2
    assert result.output == (
        "Could not upload cloud video: unsupported video file type for notes.txt; "
        "supported suffixes: .m4v, .mkv, .mov, .mp4, .webm\n"
    )


def test_pull_prints_each_cached_path_once_and_ignores_missing_local_videos(
    moto_server, credentials, cache, tmp_path, video_bytes
):
    ref = _put(moto_server, "pull/a.mp4", video_bytes)
    remote = {"store": "team", "key": ref.key, "sha256": ref.sha256}
    eval_dir = _eval_dir(tmp_path, moto_server, {"one": remote, "two": remote, "local": "missing.mp4"})
    result = _invoke("pull", "--eval-dir", str(eval_dir))
    assert result.exit_code == 0, result.output
    expected = video_store.cached_video_path(ref)
    assert result.output == f"{expected}\n" and expected.read_bytes() == video_bytes


def test_pull_without_cloud_videos_says_so(moto_server, cache, tmp_path):
    eval_dir = _eval_dir(tmp_path, moto_server, {"local": "missing.mp4"})
    result = _invoke("pull", "--eval-dir", str(eval_dir))
    assert (result.exit_code, result.output) == (0, "No cloud videos are referenced by the selected cases.\n")


def test_pull_failure_is_one_line_and_exit_2(moto_server, credentials, cache, tmp_path):
    remote = {"store": "team", "key": "absent.mp4", "sha256": "f" * 64}
    eval_dir = _eval_dir(tmp_path, moto_server, {"gone": remote})
    result = _invoke("pull", "--eval-dir", str(eval_dir), "--case", "gone")
    assert result.exit_code == 2
    case_path = (eval_dir / "cases" / "gone.yaml").resolve()
    assert result.output == (
        f"Could not pull cloud videos: {case_path}: video team:absent.mp4 does not exist in bucket '{BUCKET}'\n"
    )


def test_a_failed_download_names_the_case_file_that_refers_to_the_video(
    moto_server, credentials, cache, tmp_path, video_bytes, monkeypatch
):
    """The store's words named the store and the key, not the case file: with many cases (or one key mistyped in
    one of them) nothing said which file to fix. Every command that downloads a case's video names it now."""
    from assay.cli.video import video_app
    from assay.video.loading import load_eval_directory
    from assay.video.store_commands import materialize as command_materialize

    ref = _put(moto_server, "named/right.mp4", video_bytes)
    eval_dir = _eval_dir(tmp_path, moto_server, {
        "fine": {"store": "team", "key": ref.key, "sha256": ref.sha256},
        "typo": {"store": "team", "key": "named/rihgt.mp4", "sha256": ref.sha256},
        "stale": {"store": "team", "key": ref.key, "sha256": "0" * 64},
    })
    cases = (eval_dir / "cases").resolve()
    missing = f"{cases / 'typo.yaml'}: video team:named/rihgt.mp4 does not exist in bucket '{BUCKET}'"
    mismatch = (f"{cases / 'stale.yaml'}: downloaded video 'team:named/right.mp4' has SHA-256 {ref.sha256}, "
                f"expected {'0' * 64}")

    for case, expected in (("typo", missing), ("stale", mismatch)):
        with pytest.raises(VideoStoreError) as raised:  # what `video run`, `validate` and `seed` load cases with
            load_eval_directory(eval_dir, case=case, materialize=command_materialize)
        assert str(raised.value) == expected
        pulled = _invoke("pull", "--eval-dir", str(eval_dir), "--case", case)
        assert (pulled.exit_code, pulled.output) == (2, f"Could not pull cloud videos: {expected}\n")

    monkeypatch.chdir(tmp_path)
    ran = CliRunner().invoke(video_app, ["run", "--adapter-command", "true", "--eval-dir", str(eval_dir), "--case", "typo"])
    assert ran.exit_code == 2 and missing in ran.output, ran.output
    assert load_eval_directory(eval_dir, case="fine", materialize=command_materialize).cases[0].video.path.is_file()


def test_pull_reports_unknown_store_of_a_case(moto_server, cache, tmp_path):
    eval_dir = _eval_dir(tmp_path, moto_server, {"odd": {"store": "nope", "key": "a.mp4", "sha256": "f" * 64}})
    result = _invoke("pull", "--eval-dir", str(eval_dir))
    assert result.exit_code == 2
    case_path = (eval_dir / "cases" / "odd.yaml").resolve()
    assert result.output == (
        f"Could not pull cloud videos: {case_path}: video references unknown store 'nope'; configured stores: 'team'\n"
    )


def _age(path: Path, seconds: float) -> None:
    when = time.time() - seconds
    os.utime(path, (when, when))


def test_prune_removes_only_stale_temporaries_then_everything_with_all(cache, video_bytes, public_server, request):
    public_server.objects["/pub/keep.mp4"] = video_bytes
    store = VideoStoreConfig(name="pub", bucket="b", public_base_url=public_server.base_url)
    video = materialize(RemoteVideo("pub", "keep.mp4", _sha256(video_bytes)), store)
    folder = video.parent
    dead_lock = f"{_dead_pid()}\n"
    (folder / ".dead.mp4.lock").write_text(dead_lock)
    owner = _live_lock(folder / ".live.mp4.lock")
    request.addfinalizer(lambda: os.close(owner))
    (folder / ".live.mp4.part-1-abc").write_bytes(b"in flight")
    _age(folder / ".live.mp4.part-1-abc", 7200)
    (folder / ".orphan.mp4.part-1-def").write_bytes(b"12345")
    _age(folder / ".orphan.mp4.part-1-def", 7200)
    (folder / ".young.mp4.part-1-123").write_bytes(b"new")
    (cache / "sha256" / "zz").mkdir()

    assert prune_cache() == (2, len(dead_lock) + 5, cache.resolve())
    left = {p.name for p in _files_under(cache)}
    assert left == {video.name, f".{video.name}.verified.json", ".live.mp4.lock", ".live.mp4.part-1-abc", ".young.mp4.part-1-123"}
    assert not (cache / "sha256" / "zz").exists()

    doomed = [video, folder / f".{video.name}.verified.json", folder / ".young.mp4.part-1-123"]
    size = format_bytes(sum(path.stat().st_size for path in doomed))
    result = _invoke("prune-cache", "--all")
    assert (result.exit_code, result.output) == (0, f"Removed 3 cached files ({size}) from {cache.resolve()}\n")
    assert {p.name for p in _files_under(cache)} == {".live.mp4.lock", ".live.mp4.part-1-abc"}


def test_prune_all_of_a_cache_dir_set_to_a_folder_of_ones_own_removes_only_the_caches_files(cache):
    """GLASSKIT_EVAL_CACHE_DIR=$HOME by mistake: GlassKit's `prune-cache --all` removes every file under it."""
    video = cache / "sha256" / "ab" / ("ab" + "0" * 62 + ".mp4")
    video.parent.mkdir(parents=True)
    video.write_bytes(b"v" * 1024)
    (cache / "notes.txt").write_text("mine")
    (cache / "project" / "src").mkdir(parents=True)
    (cache / "project" / "src" / "main.py").write_text("print('mine')")
    result = _invoke("prune-cache", "--all")
    assert (result.exit_code, result.output) == (0, f"Removed 1 cached file (1.0 KiB) from {cache.resolve()}\n")
    assert {path.relative_to(cache).as_posix() for path in _files_under(cache)} == {"notes.txt", "project/src/main.py"}


def test_prune_of_missing_cache_reports_zero(tmp_path, monkeypatch):
    monkeypatch.delenv("ASSAY_CACHE_DIR", raising=False)
    monkeypatch.setenv("GLASSKIT_EVAL_CACHE_DIR", str(tmp_path / "nothing"))
    result = _invoke("prune-cache")
    assert (result.exit_code, result.output) == (0, f"Removed 0 cached files (0 B) from {(tmp_path / 'nothing').resolve()}\n")


def test_prune_singular_for_one_file(cache):
    folder = cache / "sha256" / "ab"
    folder.mkdir(parents=True)
    (folder / ".x.mp4.part-1-1").write_bytes(b"a" * 2048)
    _age(folder / ".x.mp4.part-1-1", 7200)
    result = _invoke("prune-cache")
    assert result.output == f"Removed 1 cached file (2.0 KiB) from {cache.resolve()}\n"
    assert not (cache / "sha256").exists()


def test_transfer_progress_bar_only_on_a_terminal_and_counts_every_byte(monkeypatch):
    from assay.video import cloud_store as store_module

    advanced = []

    class FakeProgress:
        def __init__(self, *args, **kwargs):
            self.tasks = []

        def add_task(self, description, total):
            self.tasks.append((description, total))
            return 0

        def update(self, task, advance):
            advanced.append(advance)

        def start(self):
            advanced.append("start")

        def stop(self):
            advanced.append("stop")

    import rich.progress

    monkeypatch.setattr(rich.progress, "Progress", FakeProgress)
    monkeypatch.setattr(store_module.sys.stderr, "isatty", lambda: False, raising=False)
    with store_module._Progress("Downloading s:k", 10, True) as quiet:
        assert not quiet.active
    monkeypatch.setattr(store_module.sys.stderr, "isatty", lambda: True, raising=False)
    with store_module._Progress("Downloading s:k", 10, True) as bar:
        assert bar.active
        bar.advance(4)
        bar.advance(6)
    assert advanced == ["start", 4, 6, "stop"]
    with store_module._Progress("Downloading s:k", 10, False) as disabled:
        assert not disabled.active


def test_prune_of_a_cache_setting_that_names_a_file_says_so(tmp_path, monkeypatch):
    """GLASSKIT_EVAL_CACHE_DIR naming a file (or a path under one) said "Removed 0 cached files … from <file>", exit 0."""
    blocker = tmp_path / "cache.txt"
    blocker.write_text("not a folder")
    monkeypatch.delenv("ASSAY_CACHE_DIR", raising=False)
    for given in (blocker, blocker / "videos"):
        monkeypatch.setenv("GLASSKIT_EVAL_CACHE_DIR", str(given))
        result = CliRunner().invoke(store_app, ["prune-cache"])
        assert result.exit_code == 2, result.output
        assert " ".join(result.output.split()) == (f"Could not prune downloaded-video cache: the video cache {given} is not "
                                                   "a folder ($GLASSKIT_EVAL_CACHE_DIR names it): point it at a folder, "
                                                   "or unset it for the default")
