"""Cloud video stores: download verified videos into the per-user cache, upload, and prune the cache.

Remote `video:` references (store, key, sha256) become local files under `cache_root()`; boto3 is imported only when a store is used.
"""

from __future__ import annotations

import functools
import hashlib
import json
import mimetypes
import os
import re
import sys
import time
import uuid
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, Self

from assay.core import fsutil
from assay.core.file_lock import LockFile, LockHeld
from assay.core.format import format_bytes
from assay.core.fsutil import fsync_directory, write_atomically
from assay.errors import VideoError
from assay.video.model import (
    expand_home,
    SUPPORTED_VIDEO_SUFFIXES,
    Case,
    RemoteVideo,
    VideoStoreConfig,
)

ASSAY_CACHE_ENV_VAR = "ASSAY_CACHE_DIR"
GLASSKIT_CACHE_ENV_VAR = "GLASSKIT_EVAL_CACHE_DIR"
STALE_AFTER_S = 60 * 60
LOCK_WAIT_TIMEOUT_S = 5 * 60
LOCK_POLL_INTERVAL_S = 0.1
PUBLIC_DOWNLOAD_TIMEOUT_S = 60
PUBLIC_USER_AGENT = "assay"
# An S3 endpoint that accepts connections but never answers held a pull for five minutes (botocore's
# 60 s timeouts, five attempts): a silent endpoint now fails within about a minute and a half.
S3_CONNECT_TIMEOUT_S = 10
S3_READ_TIMEOUT_S = 30
S3_MAX_ATTEMPTS = 3
_CHUNK_SIZE = 1024 * 1024
_CREDENTIAL_ERROR_CODES = frozenset(
    {
        "InvalidAccessKeyId",
        "SignatureDoesNotMatch",
        "InvalidToken",
        "ExpiredToken",
        "TokenRefreshRequired",
        "InvalidClientTokenId",
        "AuthorizationHeaderMalformed",
    }
)


class VideoStoreError(VideoError):
    """A cloud video that cannot be downloaded, verified, cached or uploaded (exit 2)."""


@dataclass(frozen=True, slots=True)
class UploadOutcome:
    store: str
    key: str
    sha256: str
    size_bytes: int
    already_existed: bool

    def video_block(self) -> str:
        """The `video:` mapping to paste into a case file, as YAML without a trailing newline."""
        import yaml

        document = {"video": {"store": self.store, "key": self.key, "sha256": self.sha256}}
        return yaml.safe_dump(document, sort_keys=False).rstrip()


# ---------------------------------------------------------------------------------------------
# Cache layout


def _cache_setting() -> str:
    """Which setting chose the cache root, for a message about it."""
    for name in (ASSAY_CACHE_ENV_VAR, GLASSKIT_CACHE_ENV_VAR):
        if os.environ.get(name):
            return f"${name}"
    return "the platform's cache folder"


def cache_root() -> Path:
    """The downloaded-video cache: $ASSAY_CACHE_DIR/videos, else $GLASSKIT_EVAL_CACHE_DIR, else per platform.

    ASSAY_CACHE_DIR names assay's whole cache, so videos get their own subdirectory and
    `prune-cache --all` can never delete another cache living there; GLASSKIT_EVAL_CACHE_DIR
    names the video cache itself, as it does for GlassKit.
    """
    assay_override = os.environ.get(ASSAY_CACHE_ENV_VAR)
    if assay_override:
        return expand_home(assay_override).resolve() / "videos"
    glasskit_override = os.environ.get(GLASSKIT_CACHE_ENV_VAR)
    if glasskit_override:
        return expand_home(glasskit_override).resolve()
    if os.name == "nt":
        local_app_data = os.environ.get("LOCALAPPDATA") or str(Path.home() / "AppData" / "Local")
        return Path(local_app_data) / "assay" / "Cache" / "videos"
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Caches" / "assay" / "videos"
    xdg_cache_home = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(xdg_cache_home) / "assay" / "videos"


def cached_video_path(ref: RemoteVideo) -> Path:
    """Where the verified copy of `ref` lives: <root>/sha256/<2 hex>/<sha256><lowercased key suffix>."""
    digest = ref.sha256.lower()
    suffix = PurePosixPath(ref.key).suffix.lower()
    return cache_root() / "sha256" / digest[:2] / f"{digest}{suffix}"


def _record_path(video: Path) -> Path:
    return video.with_name(f".{video.name}.verified.json")


def _lock_path(video: Path) -> Path:
    return video.with_name(f".{video.name}.lock")


def _new_part_path(video: Path) -> Path:
    return video.with_name(f".{video.name}.part-{os.getpid()}-{uuid.uuid4().hex}")


def sha256_file(path: Path) -> str:
    try:
        return fsutil.sha256_file(path)
    except OSError as error:
        raise VideoStoreError(f"could not read {path} to calculate SHA-256: {error}") from error


# ---------------------------------------------------------------------------------------------
# Verification records


def _record_matches(video: Path, sha256: str) -> bool:
    """True when the verification record vouches for the file exactly as it is now."""
    try:
        status = video.stat()
        record = json.loads(_record_path(video).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return record == {"mtime_ns": status.st_mtime_ns, "sha256": sha256, "size": status.st_size}


def _write_record(video: Path, sha256: str) -> None:
    status = video.stat()
    record = {"mtime_ns": status.st_mtime_ns, "sha256": sha256, "size": status.st_size}
    try:
        write_atomically(_record_path(video), json.dumps(record, sort_keys=True), mode=0o600)
    except OSError:
        pass  # without a record the next use rehashes; the video itself is fine


def _verify_cached(video: Path, sha256: str) -> bool:
    """Trust by record, else rehash; a file with the wrong content is deleted. Call under the lock."""
    if not video.is_file():
        return False
    if _record_matches(video, sha256):
        return True
    if sha256_file(video) == sha256:
        _write_record(video, sha256)
        return True
    try:
        video.unlink(missing_ok=True)
        _record_path(video).unlink(missing_ok=True)
    except OSError as error:
        raise VideoStoreError(f"could not replace invalid cached video {video}: {error}") from error
    return False


def _make_private_directories(directory: Path) -> None:
    missing: list[Path] = []
    current = directory
    while not current.exists():
        missing.append(current)
        if current.parent == current:
            break
        current = current.parent
    try:
        for path in reversed(missing):
            try:
                path.mkdir(mode=0o700)
            except FileExistsError:
                pass
    except OSError as error:
        raise VideoStoreError(f"could not create video cache directory {directory}: {error}") from error


# ---------------------------------------------------------------------------------------------
# Cache lock: a file holding the owner's pid, plus an flock so a live owner is never broken (a cache
# may be shared by processes in other pid namespaces, e.g. containers)


def _owner_pid(content: bytes) -> int | None:
    try:
        return int(content.decode("ascii").strip())
    except (UnicodeError, ValueError):
        return None  # an owner that has not written its pid yet looks the same


def _video_lock(lock: Path) -> LockFile:
    return LockFile(lock, _owner_pid, STALE_AFTER_S, hold_os_lock=True)


@contextmanager
def _cache_lock(lock: Path) -> Iterator[None]:
    try:
        held = _video_lock(lock).acquire(
            f"{os.getpid()}\n".encode("ascii"), wait_s=LOCK_WAIT_TIMEOUT_S, poll_s=LOCK_POLL_INTERVAL_S
        )
    except LockHeld:
        raise VideoStoreError(f"timed out waiting for video cache lock: {lock}") from None
    except OSError as error:
        raise VideoStoreError(f"could not lock video cache file {lock}: {error}") from error
    try:
        yield
    finally:
        held.release()


# ---------------------------------------------------------------------------------------------
# Progress


def _transfer_label(verb: str, store_name: str, key: str) -> str:
    name = PurePosixPath(key).name
    if len(name) > 24:  # content-addressed keys are 64+ hex digits; the bar needs the room
        name = f"{name[:10]}…{name[-8:]}"
    return f"{verb} {store_name}:{name}"


class _Progress:
    """A rich progress bar on stderr, or nothing when stderr is not a terminal."""

    def __init__(self, description: str, total: int | None, enabled: bool) -> None:
        self._bar = None
        self._task = None
        if not enabled or not sys.stderr.isatty():
            return
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            DownloadColumn,
            Progress,
            TextColumn,
            TimeRemainingColumn,
            TransferSpeedColumn,
        )

        self._bar = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            DownloadColumn(),
            TransferSpeedColumn(),
            TimeRemainingColumn(),
            console=Console(stderr=True),
            transient=True,
        )
        self._task = self._bar.add_task(description, total=total)

    @property
    def active(self) -> bool:
        return self._bar is not None

    def advance(self, count: int) -> None:
        if self._bar is not None:
            self._bar.update(self._task, advance=count)

    def __enter__(self) -> Self:
        if self._bar is not None:
            self._bar.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self._bar is not None:
            self._bar.stop()


# ---------------------------------------------------------------------------------------------
# S3 access


def _credential_arguments(store: VideoStoreConfig) -> tuple[tuple[str, str], ...]:
    arguments: list[tuple[str, str]] = []
    for argument, env_name in (
        ("aws_access_key_id", store.access_key_id_env),
        ("aws_secret_access_key", store.secret_access_key_env),
        ("aws_session_token", store.session_token_env),
    ):
        if env_name is None:
            continue
        value = os.environ.get(env_name)
        if not value:
            raise VideoStoreError(
                f"authenticated access to video store {store.name!r} requires environment variable {env_name}"
            )
        arguments.append((argument, value))
    return tuple(arguments)


def _s3_client(store: VideoStoreConfig) -> Any:
    _check_bucket_name(store)
    return _cached_s3_client(store, _credential_arguments(store))


# What botocore takes as a bucket (a name, or an access point's ARN); anything else it refused with its own
# regular expressions ("Parameter validation failed: Invalid bucket name …"), naming neither setting nor fix.
_BUCKET_NAME = re.compile(r"[a-zA-Z0-9.\-_]{1,255}|arn:.+")


def _check_bucket_name(store: VideoStoreConfig) -> None:
    """Refuse a `bucket` that is a URL or a path (`s3://eval-videos`, `eval-videos/clips`) before any request."""
    if _BUCKET_NAME.fullmatch(store.bucket):
        return
    name = store.bucket.removeprefix("s3://").strip("/").split("/")[0]
    example = f" ({name})" if _BUCKET_NAME.fullmatch(name) else ""
    raise VideoStoreError(
        f"bucket {store.bucket!r} of video store {store.name!r} is not a bucket name: set "
        f"video_stores.{store.name}.bucket in config.yaml to the bucket's name alone{example}, without s3:// or a path"
    )


@functools.lru_cache(maxsize=16)
def _cached_s3_client(store: VideoStoreConfig, credentials: tuple[tuple[str, str], ...]) -> Any:
    # Building a client loads botocore's service model (~100 ms); clients are thread-safe, so reuse.
    try:
        import boto3
    except ImportError as error:
        raise VideoStoreError(
            f"video store {store.name!r} needs boto3; install it with: pip install boto3 (assay's `s3` extra)"
        ) from error
    from botocore.config import Config

    arguments: dict[str, Any] = {"region_name": store.region, **dict(credentials)}
    if store.endpoint_url is not None:
        arguments["endpoint_url"] = store.endpoint_url
    timeouts = Config(
        connect_timeout=S3_CONNECT_TIMEOUT_S,
        read_timeout=S3_READ_TIMEOUT_S,
        retries={"total_max_attempts": S3_MAX_ATTEMPTS, "mode": "standard"},
    )
    try:
        return boto3.session.Session().client("s3", config=timeouts, **arguments)
    except Exception as error:
        raise VideoStoreError(f"could not configure S3-compatible video store {store.name!r}: {error}") from error


def _in_this_thread() -> Any:
    """Transfers run in the calling thread: with boto3's worker threads, Ctrl-C waited for a stalled request
    to time out (minutes) before the command stopped, since the pool is joined before the interrupt goes on."""
    from boto3.s3.transfer import TransferConfig

    return TransferConfig(use_threads=False)


def _client_error_details(error: BaseException) -> tuple[str, int | None, str]:
    response = getattr(error, "response", None) or {}
    details = response.get("Error") or {}
    status = (response.get("ResponseMetadata") or {}).get("HTTPStatusCode")
    return str(details.get("Code") or ""), status, str(details.get("Message") or "")


def _diagnose_head_failure(client: Any, store: VideoStoreConfig, key: str) -> tuple[str, int | None, str]:
    """HEAD responses carry no error body; a one-byte GET tells a missing bucket from a missing key."""
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        client.get_object(Bucket=store.bucket, Key=key, Range="bytes=0-0")
    except ClientError as error:
        return _client_error_details(error)
    except BotoCoreError:
        return "", None, ""  # the original failure is then described as it was
    return "", None, ""


def _describe_s3_failure(
    error: BaseException, store: VideoStoreConfig, key: str, action: str, client: Any | None
) -> str:
    """One line a person can act on, for any failure boto3 raised while talking to `store`."""
    from botocore.exceptions import (
        ClientError,
        ConnectionClosedError,
        ConnectTimeoutError,
        EndpointConnectionError,
        NoCredentialsError,
        PartialCredentialsError,
        ReadTimeoutError,
    )

    where = f"{store.name}:{key}"
    if isinstance(error, (NoCredentialsError, PartialCredentialsError)):
        return (
            f"no credentials found for video store {store.name!r}; set access_key_id_env and "
            "secret_access_key_env in config.yaml or configure the standard AWS credentials"
        )
    if isinstance(error, (EndpointConnectionError, ConnectTimeoutError)):
        endpoint = store.endpoint_url or f"AWS S3 ({store.region})"
        cause = getattr(error, "kwargs", {}).get("error")
        reason = (cause.__cause__ or cause) if cause is not None else error
        return f"could not connect to video store {store.name!r} at {endpoint}: {reason}"
    if isinstance(error, (ReadTimeoutError, ConnectionClosedError)):
        return f"connection to video store {store.name!r} failed while trying to {action} {where}: {error}"
    if isinstance(error, ClientError):
        code, status, message = _client_error_details(error)
        if code in {"403", "404", "Forbidden", "NotFound"} and client is not None:
            diagnosed = _diagnose_head_failure(client, store, key)
            if diagnosed[0]:
                code, status, message = diagnosed
        if code in _CREDENTIAL_ERROR_CODES:
            if store.access_key_id_env:
                hint = f"check {store.access_key_id_env} and {store.secret_access_key_env}"
            else:
                hint = "check the AWS credential configuration"
            return f"video store {store.name!r} rejected the credentials ({code}); {hint}"
        if code == "NoSuchBucket":
            return f"bucket {store.bucket!r} of video store {store.name!r} does not exist"
        if code in {"NoSuchKey", "404", "NotFound"}:
            return f"video {where} does not exist in bucket {store.bucket!r}"
        if code in {"AccessDenied", "403", "Forbidden"} or status == 403:
            return f"access denied to video {where} in bucket {store.bucket!r}"
        detail = f"{code}: {message}" if message else (code or str(error))
        return f"could not {action} {where}: {detail}"
    return f"could not {action} {where}: {error}"


def _head_object(client: Any, store: VideoStoreConfig, key: str, action: str) -> Mapping[str, Any] | None:
    """The object's HEAD response, or None when the bucket exists but the key does not."""
    from botocore.exceptions import ClientError

    try:
        return client.head_object(Bucket=store.bucket, Key=key)
    except ClientError as error:
        code, status, _ = _client_error_details(error)
        missing = status == 404 or code in {"404", "NoSuchKey", "NotFound"}
        if missing and _diagnose_head_failure(client, store, key)[0] != "NoSuchBucket":
            return None
        raise VideoStoreError(_describe_s3_failure(error, store, key, action, client)) from error
    except Exception as error:
        raise VideoStoreError(_describe_s3_failure(error, store, key, action, client)) from error


def _download_from_s3(store: VideoStoreConfig, key: str, part: Path, progress: bool) -> None:
    client = _s3_client(store)
    total: int | None = None
    if progress and sys.stderr.isatty():
        head = _head_object(client, store, key, "download")
        total = None if head is None else int(head.get("ContentLength") or 0)
    with _Progress(_transfer_label("Downloading", store.name, key), total, progress) as bar:
        try:
            client.download_file(
                store.bucket, key, str(part), Callback=bar.advance if bar.active else None, Config=_in_this_thread()
            )
        except Exception as error:
            raise VideoStoreError(_describe_s3_failure(error, store, key, "download", client)) from error


def _download_public(store: VideoStoreConfig, key: str, part: Path, progress: bool) -> str:
    """GET <public_base_url>/<key> without credentials into `part`, hashing as it streams."""
    from urllib.error import URLError
    from urllib.parse import quote
    from urllib.request import Request, urlopen

    base = (store.public_base_url or "").rstrip("/")
    url = f"{base}/{quote(key, safe='/')}"
    digest = hashlib.sha256()
    try:
        request = Request(url, headers={"User-Agent": PUBLIC_USER_AGENT})
        with urlopen(request, timeout=PUBLIC_DOWNLOAD_TIMEOUT_S) as response:
            length = response.headers.get("Content-Length")
            total = int(length) if length and length.isdigit() else None
            with _Progress(_transfer_label("Downloading", store.name, key), total, progress) as bar, open(part, "wb") as file:
                while chunk := response.read(_CHUNK_SIZE):
                    digest.update(chunk)
                    file.write(chunk)
                    bar.advance(len(chunk))
    except (URLError, OSError, ValueError) as error:
        raise VideoStoreError(f"could not download public video {store.name}:{key} from {url}: {error}") from error
    return digest.hexdigest()


# ---------------------------------------------------------------------------------------------
# Public operations


def materialize(ref: RemoteVideo, store: VideoStoreConfig, *, progress: bool = False) -> Path:
    """The verified cache path of `ref`, downloading it first unless a verified copy is there.

    Safe when several processes ask for the same video at once: one downloads, the others wait
    for its lock and then reuse the file. A download whose SHA-256 differs is deleted, never used.
    """
    sha256 = ref.sha256.lower()
    video = cached_video_path(ref)
    if _record_matches(video, sha256):
        return video
    _make_private_directories(video.parent)
    with _cache_lock(_lock_path(video)):
        if _verify_cached(video, sha256):
            return video
        part = _new_part_path(video)
        try:
            if store.public_base_url is not None:
                actual = _download_public(store, ref.key, part, progress)
            else:
                _download_from_s3(store, ref.key, part, progress)
                actual = sha256_file(part)
            if actual != sha256:
                raise VideoStoreError(
                    f"downloaded video '{ref.store}:{ref.key}' has SHA-256 {actual}, expected {sha256}"
                )
            try:
                os.chmod(part, 0o600)
                os.replace(part, video)
            except OSError as error:
                raise VideoStoreError(f"could not install cached video {video}: {error}") from error
            fsync_directory(video.parent)
            _write_record(video, sha256)
        finally:
            try:
                part.unlink(missing_ok=True)
            except OSError:
                pass
    return video


def in_case_file(case_path: Path | str, error: BaseException) -> VideoStoreError:
    """A download's failure naming the case file that refers to the video, as every other case-file error
    does (`<case file>: <what went wrong>`): the store's own words name the store and key, and a key may be
    shared by many cases, or mistyped in just one."""
    message = str(error)
    prefix = f"{case_path}: "
    return VideoStoreError(message if message.startswith(prefix) else prefix + message)


def find_store(stores: Mapping[str, VideoStoreConfig], name: str) -> VideoStoreConfig:
    """The named store, or the error upload gives for a name config.yaml does not define."""
    store = stores.get(name)
    if store is None:
        configured = ", ".join(repr(known) for known in sorted(stores)) or "none"
        raise VideoStoreError(f"unknown video store {name!r}; configured stores: {configured}")
    return store


def pull_case_videos(
    cases: Iterable[Case], stores: Mapping[str, VideoStoreConfig], *, progress: bool = False
) -> list[Path]:
    """Materialise every remote case video; each distinct cache path once, in case order."""
    paths: list[Path] = []
    for case in cases:
        if not isinstance(case.video, RemoteVideo):
            continue
        store = stores.get(case.video.store)
        if store is None:
            configured = ", ".join(repr(known) for known in sorted(stores)) or "none"
            raise VideoStoreError(
                f"{case.path}: video references unknown store {case.video.store!r}; configured stores: {configured}"
            )
        try:
            path = materialize(case.video, store, progress=progress)
        except VideoStoreError as error:
            raise in_case_file(case.path, error) from error
        if path not in paths:
            paths.append(path)
    return paths


def _require_video_suffix(name: str) -> None:
    if PurePosixPath(name).suffix.lower() not in SUPPORTED_VIDEO_SUFFIXES:
        supported = ", ".join(sorted(SUPPORTED_VIDEO_SUFFIXES))
        raise VideoStoreError(f"unsupported video file type for {name}; supported suffixes: {supported}")


def _matches(head: Mapping[str, Any], size: int, sha256: str) -> bool:
    metadata = head.get("Metadata") or {}
    return head.get("ContentLength") == size and str(metadata.get("sha256", "")).lower() == sha256


def upload_video(
    file: Path, store: VideoStoreConfig, store_name: str, key: str | None, *, progress: bool = False
) -> UploadOutcome:
    """Upload `file` to `store` under `key` (default `<sha256><suffix>`) unless the same object is there.

    An existing object with the same size and SHA-256 metadata is reused; any other object at
    the key is refused, never overwritten. Uploads always use S3 credentials.
    """
    path = expand_home(file).resolve()
    if not path.exists():
        raise VideoStoreError(f"video file does not exist: {path}")
    if not path.is_file():
        raise VideoStoreError(f"video path is not a file: {path}")
    _require_video_suffix(path.name)
    sha256 = sha256_file(path)
    object_key = key.strip() if key is not None else f"{sha256}{path.suffix.lower()}"
    if not object_key:
        raise VideoStoreError("object key must not be empty")
    _require_video_suffix(object_key)
    size = path.stat().st_size
    where = f"{store_name}:{object_key}"

    client = _s3_client(store)
    existing = _head_object(client, store, object_key, "inspect")
    if existing is not None:
        if _matches(existing, size, sha256):
            return UploadOutcome(store_name, object_key, sha256, size, already_existed=True)
        raise VideoStoreError(f"refusing to overwrite existing object {where}")

    extra_arguments: dict[str, Any] = {"Metadata": {"sha256": sha256}}
    content_type = mimetypes.guess_type(path.name)[0]
    if content_type is not None:
        extra_arguments["ContentType"] = content_type
    with _Progress(_transfer_label("Uploading", store_name, object_key), size, progress) as bar:
        try:
            client.upload_file(
                str(path),
                store.bucket,
                object_key,
                ExtraArgs=extra_arguments,
                Callback=bar.advance if bar.active else None,
                Config=_in_this_thread(),
            )
        except Exception as error:
            raise VideoStoreError(_describe_s3_failure(error, store, object_key, "upload", client)) from error

    uploaded = _head_object(client, store, object_key, "verify")
    if uploaded is None or not _matches(uploaded, size, sha256):
        raise VideoStoreError(f"uploaded object metadata did not verify: {where}")
    return UploadOutcome(store_name, object_key, sha256, size, already_existed=False)


# ---------------------------------------------------------------------------------------------
# Pruning


def _is_old(status: os.stat_result) -> bool:
    return time.time() - status.st_mtime > STALE_AFTER_S


def _lock_of_part(part: Path) -> Path:
    return part.with_name(part.name.split(".part-", 1)[0] + ".lock")


def _should_remove(path: Path, status: os.stat_result, remove_everything: bool) -> bool:
    name = path.name
    if ".part-" in name:
        # an unfinished download belongs to whoever holds its lock; never pull it from under them
        lock = _lock_of_part(path)
        owner_gone = not lock.exists() or _video_lock(lock).is_abandoned()
        return owner_gone and (remove_everything or _is_old(status))
    if name.startswith(".") and name.endswith(".tmp"):  # a verification record being replaced
        return remove_everything or _is_old(status)
    return remove_everything


def prune_cache(all: bool = False) -> tuple[int, int, Path]:
    """Remove stale temporaries (and with `all`, every cached video); returns (files, bytes, root).

    Locks and part files of a download in progress are kept even with `all`. Only the cache's own
    tree (`<root>/sha256/`, where every video, record and temporary lives) is walked: a
    GLASSKIT_EVAL_CACHE_DIR set by mistake to a folder of one's own (a home folder) loses nothing
    else, where GlassKit's `--all` removes every file under it.
    """
    root = cache_root()
    if not root.is_dir():
        if root.exists() or any(folder.is_file() for folder in root.parents):
            raise VideoStoreError(f"the video cache {root} is not a folder ({_cache_setting()} names it): point it at a "
                                  "folder, or unset it for the default")
        return 0, 0, root
    removed_files = 0
    removed_bytes = 0
    for directory, _, names in os.walk(root / "sha256", topdown=False):
        for name in names:
            path = Path(directory) / name
            try:
                status = path.lstat()
                if name.endswith(".lock"):
                    if _video_lock(path).break_if_stale() != "removed":
                        continue
                elif _should_remove(path, status, all):
                    path.unlink()
                else:
                    continue
            except FileNotFoundError:
                continue
            except OSError as error:
                raise VideoStoreError(f"could not remove cached file {path}: {error}") from error
            removed_files += 1
            removed_bytes += status.st_size
        if Path(directory) != root:
            try:
                os.rmdir(directory)
            except OSError:
                pass  # not empty
    return removed_files, removed_bytes, root


__all__ = [
    "UploadOutcome",
    "VideoStoreError",
    "cache_root",
    "cached_video_path",
    "find_store",
    "in_case_file",
    "format_bytes",
    "materialize",
    "prune_cache",
    "pull_case_videos",
    "sha256_file",
    "upload_video",
]
