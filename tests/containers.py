"""Docker images for the tests, built on this machine without any registry, and the reason when they cannot be.

`python tests/containers.py build` builds them (`.ci/run` starts it in the background while the rest of
the suite runs); the `docker_image` fixture waits for that build or makes the images itself. The base
image is a Debian root file system with Python and git (debootstrap from the mirror apt already uses,
then `docker import`); a second image is built from a Dockerfile `FROM` it, so both sources the
provider supports are exercised. The daemon keeps both: later sessions on the same machine reuse them.
Tests skip only when no daemon answers or an image cannot be built, and say which. The module-scoped
`provider` fixture runs a sandbox table over `local` and `docker` (`sandbox_template(provider)` is its
template), and `docker_containers()` lists assay's containers on the daemon.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BASE_IMAGE = "assay-test/python-git:bookworm"
DOCKERFILE_IMAGE = "assay-test/dockerfile:1"
PACKAGES = "python3,git,procps"
LOCK = Path(tempfile.gettempdir()) / "assay-test-images.lock"
BUILD_LOG = Path(tempfile.gettempdir()) / "assay-test-images.log"


def daemon_problem() -> str | None:
    """None when the Docker SDK is installed and a daemon answers; else what is missing."""
    try:
        import docker  # noqa: F401
    except ImportError:
        return "the docker SDK is not installed (pip install docker, in the test extra)"
    from assay.agent.sandbox import SandboxError
    from assay.agent.sandbox.docker import docker_client

    try:
        docker_client().close()
    except SandboxError as error:
        return f"{error}; .ci/run starts one (dockerd --bridge=none --iptables=false, see ../shared/RECIPES.md)"
    return None


def _has_image(client, name: str) -> bool:
    try:
        client.images.get(name)
    except Exception:  # noqa: BLE001 - ImageNotFound
        return False
    return True


def _debian_mirror() -> str:
    sources = Path("/etc/apt/sources.list.d/debian.sources")
    if sources.is_file():
        found = re.search(r"^URIs:\s*(\S+)", sources.read_text(), re.MULTILINE)
        if found:
            return found.group(1)
    listing = Path("/etc/apt/sources.list")
    if listing.is_file():
        found = re.search(r"^deb\s+(?:\[[^]]*\]\s+)?(\S+)\s+\S+\s+main", listing.read_text(), re.MULTILINE)
        if found:
            return found.group(1)
    return "http://deb.debian.org/debian"


def _build_base(client) -> None:
    debootstrap = shutil.which("debootstrap") or ("/usr/sbin/debootstrap" if Path("/usr/sbin/debootstrap").exists() else None)
    if debootstrap is None:
        raise RuntimeError("debootstrap is not installed (apt-get install -y debootstrap; .ci/run does)")
    if os.geteuid() != 0:
        raise RuntimeError("debootstrap needs root to make the base image's root file system")
    with tempfile.TemporaryDirectory(prefix="assay-rootfs-") as scratch:
        rootfs, archive = Path(scratch) / "rootfs", Path(scratch) / "rootfs.tar"
        with BUILD_LOG.open("a") as log:
            subprocess.run([debootstrap, "--variant=minbase", f"--include={PACKAGES}", "bookworm", str(rootfs),
                            _debian_mirror()], check=True, stdout=log, stderr=subprocess.STDOUT, timeout=1500)
            subprocess.run(["tar", "-C", str(rootfs), "-cf", str(archive), "."], check=True, stdout=log,
                           stderr=subprocess.STDOUT, timeout=600)
        repository, tag = BASE_IMAGE.split(":")
        client.api.import_image_from_file(str(archive), repository=repository, tag=tag,
                                          changes=['CMD ["/bin/sh"]', "ENV LANG=C.UTF-8"])


def _build_from_dockerfile(client) -> None:
    with tempfile.TemporaryDirectory(prefix="assay-dockerfile-") as context:
        (Path(context) / "Dockerfile").write_text(f"FROM {BASE_IMAGE}\nRUN echo built > /built-by-dockerfile.txt\n")
        client.images.build(path=context, tag=DOCKERFILE_IMAGE, rm=True)


def ensure_images() -> str | None:
    """Build whatever of the test images is missing (one builder at a time); None, or why they cannot be."""
    problem = daemon_problem()
    if problem is not None:
        return problem
    from assay.agent.sandbox.docker import docker_client

    client = docker_client()
    try:
        if _has_image(client, BASE_IMAGE) and _has_image(client, DOCKERFILE_IMAGE):
            return None
        with LOCK.open("w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # a build already running (.ci/run's) finishes first
            try:
                if not _has_image(client, BASE_IMAGE):
                    _build_base(client)
                if not _has_image(client, DOCKERFILE_IMAGE):
                    _build_from_dockerfile(client)
            except Exception as error:  # noqa: BLE001 - every failure is a reason to skip, named
                tail = BUILD_LOG.read_text(errors="replace")[-400:] if BUILD_LOG.exists() else ""
                return f"the test image {BASE_IMAGE} could not be built: {error} {tail}".strip()
        return None
    finally:
        client.close()


def main() -> int:
    if sys.argv[1:] != ["build"]:
        print("usage: python tests/containers.py build", file=sys.stderr)
        return 2
    started = time.monotonic()
    problem = ensure_images()
    if problem is not None:
        print(f"test images not built: {problem}", file=sys.stderr)
        return 1
    print(f"test images ready: {BASE_IMAGE}, {DOCKERFILE_IMAGE} ({time.monotonic() - started:.0f} s)")
    return 0


PROVIDERS = ("local", "docker")


def sandbox_template(provider: str, **options):
    """The template-bearing layer the provider-parametrised tables use: `local_sandbox()`, or a container
    of the base test image (`docker_sandbox(image=BASE_IMAGE)`); `options` go to the provider."""
    from assay.agent import docker_sandbox, local_sandbox

    return local_sandbox(**options) if provider == "local" else docker_sandbox(image=BASE_IMAGE, **options)


def docker_containers(sandbox_id: str | None = None, *, root: Path | None = None) -> list:
    """assay's containers on the daemon (all of them, running or not), one sandbox's, or those whose sandboxes
    live under `root` (a test's own: another run on the same daemon may have left containers of its own)."""
    from assay.agent.sandbox.docker import docker_client

    client = docker_client()
    try:
        label = "assay.sandbox" if sandbox_id is None else f"assay.sandbox={sandbox_id}"
        found = client.containers.list(all=True, filters={"label": label})
    finally:
        client.close()
    if root is None:
        return found
    return [container for container in found if container.labels.get("assay.root", "").startswith(f"{root}/")]


with contextlib.suppress(ImportError):
    import pytest

    @pytest.fixture(scope="session")
    def docker_image() -> str:
        """The base test image's name, once it exists; skips with the reason when it cannot."""
        problem = ensure_images()
        if problem is not None:
            pytest.skip(f"Docker tests need a daemon and a locally built image: {problem}")
        return BASE_IMAGE

    @pytest.fixture(scope="module", params=PROVIDERS)
    def provider(request) -> str:
        """Each provider a sandbox table runs over: `local`, then `docker` (skipped, saying why, when no
        daemon answers or the image cannot be built)."""
        if request.param == "docker":
            request.getfixturevalue("docker_image")
        return request.param


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
    sys.exit(main())
