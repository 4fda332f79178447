"""The change ledger: a private git repository over the workdir that snapshots it around each send window.

Its git dir lives outside the workspace (the agent's own `.git` is never touched, and under bubblewrap
the ledger is not even visible), it ignores `.gitignore` files (an agent cannot hide a change by writing
one), and it applies only the eval's `diff` rules on top of the default excludes.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from assay.agent.sandbox.changes import (
    ADDED,
    DELETED,
    MAX_CONTENT_BYTES,
    MODIFIED,
    Content,
    FileChange,
    FileChangesView,
    WindowDelta,
)
from assay.agent.sandbox.diff_rules import DEFAULT_EXCLUDES, DiffRules

_GIT_SETTINGS = {
    "core.autocrlf": "false", "core.fsmonitor": "false", "core.untrackedCache": "false", "core.quotepath": "off",
    "core.symlinks": "true", "core.filemode": "true", "core.hooksPath": "/dev/null", "gc.auto": "0",
    "advice.addEmbeddedRepo": "false", "user.name": "assay", "user.email": "assay@localhost",
    # Every blob counts as "big", so `git add` streams a snapshot's new blobs into one pack instead of a
    # loose file each: a 1,000-file baseline is one file write, not a thousand (and a thousand fewer to
    # delete at teardown). Reading them back is unchanged; a textual `git diff` needs `-c` to undo it.
    "core.bigFileThreshold": "1",
}
# git allocates and frees zlib state per object; with glibc's default trimming each one costs a round
# of brk calls, which on some virtual machines made a 1,000-file baseline three times slower.
_MALLOC_TUNING = "glibc.malloc.trim_threshold=134217728:glibc.malloc.top_pad=16777216"
_NULL_BLOB = "0" * 40


def _pathspecs(pattern: str, magic: str) -> list[str]:
    """A `.gitignore`-style pattern as git pathspecs: a bare name matches at any depth, a path is anchored."""
    body = pattern.strip().rstrip("/")
    if not body:
        return []
    if body.startswith("/"):
        body = body[1:]
    elif "/" not in body:
        body = f"**/{body}"
    return [f":({magic})" + body, f":({magic})" + body + "/**"]


def git_environment(git_dir: str, workdir: str) -> dict[str, str]:
    """A git that reads no user or system config and only the ledger's repository."""
    environment = {
        "PATH": os.environ.get("PATH", os.defpath), "HOME": git_dir, "GIT_DIR": git_dir, "GIT_WORK_TREE": workdir,
        "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_TERMINAL_PROMPT": "0",
        "GIT_OPTIONAL_LOCKS": "0", "LC_ALL": "C", "GLIBC_TUNABLES": _MALLOC_TUNING,
        "GIT_CONFIG_COUNT": str(len(_GIT_SETTINGS)),
    }
    for position, (key, value) in enumerate(_GIT_SETTINGS.items()):
        environment[f"GIT_CONFIG_KEY_{position}"] = key
        environment[f"GIT_CONFIG_VALUE_{position}"] = value
    return environment


def link_packs(packs: Sequence[str], git_dir: str) -> bool:
    """Hard-link `packs` into a fresh ledger's object store; False (nothing linked) where links fail."""
    folder = os.path.join(git_dir, "objects", "pack")
    linked: list[str] = []
    try:
        os.makedirs(folder, exist_ok=True)
        for pack in packs:
            # The pack before its index: git only looks at a pack whose .idx it sees.
            for path in (pack, pack[: -len(".pack")] + ".idx"):
                target = os.path.join(folder, os.path.basename(path))
                os.link(path, target)
                linked.append(target)
    except OSError:
        for target in reversed(linked):
            with contextlib.suppress(OSError):
                os.unlink(target)
        return False
    return bool(linked)


class HostGit:
    """The ledger's git run on the host, for sandboxes whose workdir is a host folder; `packs` are the
    template packs (see template_packs.py) of what was uploaded into it."""

    def __init__(self, git_dir: str, workdir: str, packs: Sequence[str] = ()) -> None:
        self.git_dir = git_dir
        self.workdir = workdir
        self._packs = tuple(packs)
        self._environment = git_environment(git_dir, workdir)

    async def prepare(self, run: Any) -> bool:
        """Make the repository and link the template packs into it; True when they were linked (the
        baseline then finds the uploaded blobs stored). What `git init --template=` makes and git
        needs (HEAD, objects/, refs/) is made here: spawning git for it cost more than hashing."""
        try:
            os.makedirs(os.path.join(self.git_dir, "objects", "pack"))
            os.makedirs(os.path.join(self.git_dir, "refs", "heads"))
            with open(os.path.join(self.git_dir, "HEAD"), "w", encoding="ascii") as head:
                head.write("ref: refs/heads/main\n")
        except OSError as error:
            raise LedgerError(f"could not make the ledger in {self.git_dir}: {error.strerror or error}") from None
        return bool(self._packs) and link_packs(self._packs, self.git_dir)

    async def __call__(self, args: Sequence[str], stdin: bytes | None = None) -> tuple[int, bytes, bytes]:
        process = await asyncio.create_subprocess_exec(
            "git", *args, cwd=self.workdir, env=self._environment,
            stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )
        out, err = await process.communicate(stdin)
        return process.returncode or 0, out, err


class ExecGit:
    """The ledger's git run inside the sandbox (a container), through the provider's `exec`."""

    def __init__(self, backend: Any, git_dir: str) -> None:
        self._backend = backend
        self._git_dir = git_dir
        self._environment = {
            name: value for name, value in git_environment(git_dir, backend.workdir).items()
            if name not in ("PATH", "GLIBC_TUNABLES")
        }

    async def __call__(self, args: Sequence[str], stdin: bytes | None = None) -> tuple[int, bytes, bytes]:
        raw = await self._backend.exec(
            ["git", *args], env=self._environment, cwd=self._backend.workdir, timeout=300.0, on_stdout=None,
            on_stderr=None, signals=(), user=None, stdin=stdin,
        )
        return (raw.exit_code if raw.exit_code is not None else -1), raw.stdout, raw.stderr

    async def prepare(self, run: Any) -> bool:
        """Nothing yet: the first `snapshot` makes the repository, in the same round trip."""
        return False

    async def snapshot(self, add: Sequence[str], since: str | None, limit: int) -> tuple[int, bytes, bytes]:
        """(exit code, stdout, stderr) of one exec that makes the repository if needed, adds, writes the
        tree and, when it differs from `since`, lists the delta and the changed blobs up to `limit` bytes:
        each command run in a sandbox costs a process the runtime sets up (tens of milliseconds in a
        container), so a window's close is one of them, not five. `parse_snapshot` reads the output."""
        for _ in range(2):
            raw = await self._backend.exec(
                ["sh", "-c", _SNAPSHOT_SCRIPT, "ledger-snapshot", since or "", str(limit), *add], env=self._environment,
                cwd=self._backend.workdir, timeout=300.0, on_stdout=None, on_stderr=None, signals=(), user=None,
                stdin=None,
            )
            # Docker's exec can lose a short command's output (moby#27289, seen here under load): the script
            # always prints its first line, and taking the snapshot again gives the same tree.
            if raw.exit_code != 0 or _snapshot_head(raw.stdout) is not None:
                break
        return (raw.exit_code if raw.exit_code is not None else -1), raw.stdout, raw.stderr


# $1: the tree to compare with (or ""), $2: the largest blob read back, the rest: the `git add` arguments.
# Prints "<add's exit code> <tree>", then, when the tree changed: "<delta bytes> <sizes bytes>", the raw
# `diff-tree -z`, the `cat-file --batch-check` of the changed blobs, and `cat-file --batch` of the small ones.
_SNAPSHOT_SCRIPT = """
since=$1; limit=$2; shift 2
if [ ! -f "$GIT_DIR/HEAD" ]; then git init -q --template= || exit $?; fi
git "$@" 2>"$GIT_DIR/assay-add.err"; added=$?
tree=$(git write-tree --missing-ok) || exit $?
printf '%s %s\\n' "$added" "$tree"
cat "$GIT_DIR/assay-add.err" >&2
if [ -z "$since" ] || [ "$since" = "$tree" ]; then exit 0; fi
git diff-tree -r -z --no-renames --no-ext-diff "$since" "$tree" > "$GIT_DIR/assay-delta" || exit $?
git diff-tree -r --no-renames --no-ext-diff "$since" "$tree" | while read -r old_mode new_mode old new rest; do
  if [ "$old_mode" != :160000 ] && [ "$old" != 0000000000000000000000000000000000000000 ]; then echo "$old"; fi
  if [ "$new_mode" != 160000 ] && [ "$new" != 0000000000000000000000000000000000000000 ]; then echo "$new"; fi
done | git cat-file --batch-check > "$GIT_DIR/assay-sizes" || exit $?
printf '%s %s\\n' "$(wc -c < "$GIT_DIR/assay-delta")" "$(wc -c < "$GIT_DIR/assay-sizes")"
cat "$GIT_DIR/assay-delta" "$GIT_DIR/assay-sizes"
while read -r blob kind size; do
  if [ "$kind" = blob ] && [ "$size" -le "$limit" ]; then echo "$blob"; fi
done < "$GIT_DIR/assay-sizes" | git cat-file --batch
"""


async def host_snapshot(git: HostGit, add: Sequence[str], since: str | None, limit: int) -> tuple[int, bytes, bytes]:
    """`ExecGit.snapshot`'s one script, run on the host for a `HostGit` (a container's host folder, before
    anything ran in the container)."""
    process = await asyncio.create_subprocess_exec(
        "sh", "-c", _SNAPSHOT_SCRIPT, "ledger-snapshot", since or "", str(limit), *add, cwd=git.workdir,
        env=git_environment(git.git_dir, git.workdir), stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )
    out, err = await process.communicate()
    return process.returncode or 0, out, err


def _snapshot_head(out: bytes) -> tuple[int, str] | None:
    """The snapshot script's first line, (add's exit code, tree), or None when it is not there."""
    head = out.partition(b"\n")[0].decode("ascii", "replace").split(" ")
    if len(head) != 2 or not head[0].isdigit() or not head[1]:
        return None
    return int(head[0]), head[1]


def parse_snapshot(out: bytes) -> tuple[int, str, bytes | None, bytes, bytes]:
    """(add's exit code, tree, raw delta or None when unchanged, batch-check listing, batch contents);
    LedgerError when the output is not the script's."""
    found = _snapshot_head(out)
    if found is None:
        raise LedgerError(f"git snapshot: its output was lost or cut ({len(out)} bytes)")
    added, tree = found
    _, _, rest = out.partition(b"\n")
    if not rest:
        return int(added), tree, None, b"", b""
    sizes_line, _, rest = rest.partition(b"\n")
    delta_size, sizes_size = (int(part) for part in sizes_line.split())
    delta, sizes, contents = rest[:delta_size], rest[delta_size:delta_size + sizes_size], rest[delta_size + sizes_size:]
    return added, tree, delta, sizes, contents


class LedgerError(Exception):
    pass


class ChangeLedger:
    """Snapshots of the workdir as git trees; a window is the delta between two of them. `git` runs
    the ledger's git where the workdir is (`HostGit`, `ExecGit`) and makes its repository (`prepare`)."""

    def __init__(self, git: Any, rules: DiffRules = DiffRules(), touches: Callable[[], int] | None = None) -> None:
        """`touches()`, when given, counts what could have changed the workdir (the sandbox's commands,
        writes and uploads): a window that opens with the count unchanged since the last snapshot starts
        from that snapshot's tree, with no round trip. Only for a workdir nothing else reaches (a
        container's): a local one can be written from the host directly."""
        self._git = git
        self._rules = rules
        self._touches = touches
        self._last: tuple[int, str] | None = None  # the touch count and the tree of the latest snapshot
        self._add = ["add", "-A", "-f", "--ignore-errors", "--", "."]
        for pattern in rules.excluded():
            self._add += _pathspecs(pattern, "exclude,glob")
        self._readd = [spec for pattern in rules.reincluded() for spec in _pathspecs(pattern, "glob")]
        self.baseline: str | None = None
        self.windows: list[WindowDelta] = []
        self.failure: str | None = None
        self._open: tuple[str, int, int, str] | None = None  # label, session, turn, start tree

    async def _run(self, *args: str, stdin: bytes | None = None, tolerate: str | None = None) -> bytes:
        code, out, err = await self._git(list(args), stdin)
        if code != 0 and not (tolerate and tolerate.encode() in err):
            message = err.decode("utf-8", "replace").strip() or f"exit code {code}"
            if code == 127:
                message = "git is not installed in the sandbox"
            command = next(arg for arg in args if not arg.startswith("-") and "=" not in arg)
            raise LedgerError(f"git {command}: {message}")
        return out

    async def _snapshot_and_delta(self, since: str | None) -> tuple[str, tuple[FileChange, ...]]:
        """The workdir as a tree id, and what changed since the tree `since` (nothing when None); in one
        round trip when the ledger's git can (`ExecGit.snapshot`)."""
        touched = self._touches() if self._touches is not None else None
        tree, changes = await self._snapshot_now(since)
        if touched is not None:
            self._last = (touched, tree)
        return tree, changes

    async def _snapshot_now(self, since: str | None) -> tuple[str, tuple[FileChange, ...]]:
        fast = getattr(self._git, "snapshot", None)
        if fast is None or self._readd:
            if fast is not None and self.baseline is None:  # the one-exec snapshot would have made it
                await self._run("init", "-q", "--template=")
            tree = await self.snapshot()
            return tree, (await self._delta(since, tree) if since is not None and tree != since else ())
        code, out, err = await fast(self._add, since, MAX_CONTENT_BYTES)
        if code != 0:
            message = err.decode("utf-8", "replace").strip() or f"exit code {code}"
            raise LedgerError("git is not installed in the sandbox" if code == 127 else f"git snapshot: {message}")
        added, tree, delta, sizes, contents = parse_snapshot(out)
        if added != 0 and b"adding files failed" not in err:
            raise LedgerError(f"git add: {err.decode('utf-8', 'replace').strip() or f'exit code {added}'}")
        if delta is None:
            return tree, ()
        return tree, self._changes(delta, _parse_contents(sizes, contents))

    async def snapshot(self) -> str:
        """The workdir as a tree id (only changed files are hashed again: git's stat cache)."""
        # --ignore-errors: an unreadable file must not lose the whole snapshot; it is simply not seen.
        await self._run(*self._add, tolerate="adding files failed")
        if self._readd:
            # `git add` refuses a pathspec that matches nothing; `ls-files` does not, so it picks the paths.
            listed = await self._run("ls-files", "-z", "--cached", "--others", "--", *self._readd)
            if listed:
                await self._run("add", "-A", "-f", "--ignore-errors", "--pathspec-from-file=-", "--pathspec-file-nul",
                                stdin=listed, tolerate="adding files failed")
        # --missing-ok: `add` has just written every blob, so checking each one exists again (a lookup
        # per file) would only repeat its work.
        return (await self._run("write-tree", "--missing-ok")).decode().strip()

    async def start(self, *, prepared: bool = False) -> str | None:
        """Create the ledger and take the baseline: everything written so far is not the agent's.
        `prepared`: the repository exists already (a sandbox shared between attempts keeps its ledger)."""
        try:
            if not prepared and await self._git.prepare(self._run):
                # The uploaded blobs are stored already: with git's usual threshold `add` looks each one
                # up and writes nothing, where streaming it into a pack would compress it all again.
                self._add = ["-c", "core.bigFileThreshold=512m", *self._add]
            self.baseline, _ = await self._snapshot_and_delta(None)
        except LedgerError as error:
            self.failure = str(error)
        return self.baseline

    async def restore(self, tree: str) -> None:
        """Make the workdir `tree` again, as `git reset --hard` and `git clean -fdx` would: what changed is
        written back, what was added is removed (empty folders too). Paths these rules exclude (`.git`,
        dependency folders, caches) are neither counted nor restored. LedgerError when git fails."""
        excluded = self._add[self._add.index(".") + 1:]  # the exclude pathspecs after "."
        await self._run("read-tree", tree)  # so the add below sees every path changed since `tree`
        await self._run(*self._add, tolerate="adding files failed")
        await self._run("read-tree", "-u", "--reset", tree)
        await self._run("clean", "-f", "-d", "-x", "-q", "--", ".", *excluded)
        self._last = None

    async def open_window(self, label: str, session: int, turn: int) -> None:
        if self.failure is not None:
            return
        last = self._last
        if last is not None and self._touches is not None and self._touches() == last[0]:
            self._open = (label, session, turn, last[1])  # nothing has run or been written since
            return
        try:
            self._open = (label, session, turn, (await self._snapshot_and_delta(None))[0])
        except LedgerError as error:
            self.failure = f"{label}: {error}"
            self._open = None

    async def close_window(self) -> WindowDelta | None:
        opened, self._open = self._open, None
        if opened is None or self.failure is not None:
            return None
        label, session, turn, start = opened
        try:
            end, changes = await self._snapshot_and_delta(start)
        except LedgerError as error:
            self.failure = f"{label}: {error}"
            return None
        except BaseException:
            # Cut short (a second interrupt): this window's changes are unknown, so nothing may pass on them.
            self.failure = f"{label}: the window was cut short before its snapshot was taken"
            raise
        window = WindowDelta(label, session, turn, start, end, changes)
        self.windows.append(window)
        return window

    async def _delta(self, start: str, end: str) -> tuple[FileChange, ...]:
        raw = await self._run("diff-tree", "-r", "-z", "--no-renames", "--no-ext-diff", start, end)
        rows = _delta_rows(raw)
        blobs = {blob for row in rows for blob, mode in ((row[4], row[2]), (row[5], row[3]))
                 if blob != _NULL_BLOB and mode != "160000"}
        return self._changes(raw, await self._contents(sorted(blobs)))

    def _changes(self, raw: bytes, contents: Mapping[str, tuple[int, bytes | None]]) -> tuple[FileChange, ...]:
        changes = []
        for path, status, old_mode, new_mode, old_blob, new_blob in _delta_rows(raw):
            kind = {"A": ADDED, "D": DELETED}.get(status, MODIFIED)
            before = None if kind == ADDED else _side(old_blob, old_mode, contents)
            after = None if kind == DELETED else _side(new_blob, new_mode, contents)
            changes.append(FileChange(path, kind, before, after))
        return tuple(sorted(changes, key=lambda change: change.path))

    async def _contents(self, blobs: Sequence[str]) -> dict[str, tuple[int, bytes | None]]:
        """Each blob's size, and its bytes when small enough to read."""
        if not blobs:
            return {}
        listing = await self._run("cat-file", "--batch-check", stdin="".join(f"{blob}\n" for blob in blobs).encode())
        sizes = _parse_sizes(listing)
        small = [blob for blob in blobs if sizes.get(blob, MAX_CONTENT_BYTES + 1) <= MAX_CONTENT_BYTES]
        data = b""
        if small:
            data = await self._run("cat-file", "--batch", stdin="".join(f"{blob}\n" for blob in small).encode())
        return _parse_contents(listing, data)

    def view(self) -> FileChangesView:
        if self.failure is not None:
            return FileChangesView(tuple(self.windows), False, f"the change ledger stopped: {self.failure}")
        return FileChangesView(tuple(self.windows))


def _delta_rows(raw: bytes) -> list[tuple[str, str, str, str, str, str]]:
    """`diff-tree -r -z` output as (path, status letter, old mode, new mode, old blob, new blob) rows."""
    fields = raw.split(b"\0")
    rows: list[tuple[str, str, str, str, str, str]] = []
    position = 0
    while position + 1 < len(fields) and fields[position].startswith(b":"):
        old_mode, new_mode, old_blob, new_blob, status = fields[position][1:].decode().split(" ")
        rows.append((fields[position + 1].decode("utf-8", "surrogateescape"), status[0], old_mode, new_mode,
                     old_blob, new_blob))
        position += 2
    return rows


def _parse_sizes(listing: bytes) -> dict[str, int]:
    sizes: dict[str, int] = {}
    for line in listing.decode().splitlines():
        parts = line.split()
        if len(parts) == 3:
            sizes[parts[0]] = int(parts[2])
    return sizes


def _parse_contents(listing: bytes, data: bytes) -> dict[str, tuple[int, bytes | None]]:
    """Sizes from `cat-file --batch-check`, bytes from `cat-file --batch` (of the small blobs only)."""
    found: dict[str, tuple[int, bytes | None]] = {blob: (size, None) for blob, size in _parse_sizes(listing).items()}
    cursor = 0
    while cursor < len(data):
        header_end = data.index(b"\n", cursor)
        blob, _, size_text = data[cursor:header_end].decode().split(" ")
        size = int(size_text)
        found[blob] = (size, data[header_end + 1: header_end + 1 + size])
        cursor = header_end + 1 + size + 1
    return found


def _side(blob: str, mode: str, contents: Mapping[str, tuple[int, bytes | None]]) -> Content:
    if mode == "160000":
        return Content(blob, 0, None, "embedded repository")
    size, data = contents.get(blob, (0, None))
    if data is None:
        return Content(blob, size, None, "oversized")
    if b"\0" in data[:8000]:
        return Content(blob, size, None, "binary")
    try:
        return Content(blob, size, data.decode("utf-8"))
    except UnicodeDecodeError:
        return Content(blob, size, None, "binary")


__all__ = [
    "ChangeLedger", "DEFAULT_EXCLUDES", "DiffRules", "ExecGit", "HostGit", "LedgerError", "git_environment",
    "host_snapshot", "link_packs",
]
