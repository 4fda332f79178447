"""`--resume REF` for every kind: refuse options the checkpoint restores, find it, restore the request.

A checkpoint stores what its run was asked (`Resumable.invocation`); `--resume` asks for exactly that
again, so an option that would change a stored value is refused, in the kind's own words. Every
problem is a `UsageError` on `--resume`, which each command line shows its own way.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Generic, TypeVar

from assay.core.run.kinds import Resumable, Resumed, RunKind
from assay.core.run.request import Outputs, flag_of, with_defaults
from assay.errors import AssayError, UsageError

__all__ = ["Restored", "restore"]

Request = TypeVar("Request")


@dataclass(frozen=True)
class Restored(Generic[Request]):
    request: Request
    outputs: Outputs
    resume: Resumed


def overridden(spec: Resumable[Request], given: Request, outputs: Outputs) -> list[str]:
    """The flags of the stored values this command line set, in the checkpoint's key order."""
    asked = spec.invocation(given, outputs)
    unasked = spec.invocation(with_defaults(given), Outputs())
    return [
        flag_of(key, type(given), Outputs) for key, value in asked.items() if key not in unasked or unasked[key] != value
    ]


def restore(
    kind: RunKind[Request], ref: str, given: Request, outputs: Outputs, also_given: Sequence[str] = ()
) -> Restored[Request]:
    """The request a `--resume REF` checkpoint was made with, with this invocation's outputs where the
    checkpoint keeps none. `given` is what the command line asked (its stored options must be left
    at their defaults); `also_given` names options given that are not request fields (a config file)."""
    spec = kind.resume
    if spec is None:
        raise UsageError(f"{kind.name} runs cannot be resumed", "--resume")
    overrides = [*overridden(spec, given, outputs), *also_given]
    if overrides:
        raise UsageError(spec.refusal(overrides), "--resume")
    from assay.core.journal import read_manifest

    try:
        path = spec.locate(ref, given)
        manifest = read_manifest(path, spec.checkpoint_kind)
        request, restored_outputs = spec.restored(manifest.get("invocation"), path / "manifest.json", given, outputs)
    except UsageError:
        raise
    except AssayError as error:  # a checkpoint that cannot be resumed is a bad `--resume` value
        raise UsageError(str(error), "--resume") from None
    return Restored(request, restored_outputs, Resumed(path, manifest))


def locate_in(base: Path, ref: str) -> Path:
    """`--resume REF` as a path, relative to the current folder, or an id under `base`'s checkpoints;
    absolute, as GlassKit prints a checkpoint's path and writes it to the report (also for a relative `base`)."""
    import os

    from assay.core.journal import resolve_checkpoint_ref

    return Path(os.path.abspath(resolve_checkpoint_ref(ref, Path(base).expanduser(), Path.cwd())))


def with_the_id_meant(path: Path, ref: str) -> Path:
    """`path` (a located `--resume REF`) when it exists; else, for a misspelt bare id close to one of the checkpoints
    beside it, the manifest error that reading it gives, ending with the id meant (it said only `[Errno 2] No such
    file or directory`, twice naming the path)."""
    from assay.core.format import did_you_mean
    from assay.core.journal import MANIFEST_FILE_NAME, CheckpointError

    if path.exists() or Path(ref).name != ref:
        return path
    try:
        ids = sorted(entry.name for entry in path.parent.iterdir() if (entry / MANIFEST_FILE_NAME).is_file())
    except OSError:
        return path
    hint = did_you_mean(ref, ids, cutoff=0.8, shown=str)
    if not hint:
        return path
    raise CheckpointError(f"could not read checkpoint manifest {path / MANIFEST_FILE_NAME}: no checkpoint {ref!r} in "
                          f"{path.parent}{hint}")
