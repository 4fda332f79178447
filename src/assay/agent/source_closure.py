"""The source closure of a Python file: it and every project module it imports, transitively, by content hash.

Imports are read from the syntax tree (top level and inside functions, `importlib.import_module("x")`
with a literal), resolved against the project's import roots; the standard library and installed
packages are never part of a closure. Each file is read and parsed once per process.
"""

from __future__ import annotations

import ast
import hashlib
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = ["SourceClosure", "content_hash"]

_INSTALLED = ("site-packages", "dist-packages")
_SKIPPED_DIRS = frozenset({".git", "__pycache__", "node_modules", ".venv", ".assay"})


_BLOCKS = ("body", "orelse", "finalbody", "handlers", "cases")


def _statements(body: list[ast.stmt]) -> Iterable[ast.AST]:
    """Every statement, nested ones too (in functions, classes, branches, loops, handlers)."""
    pending = list(body)
    while pending:
        node = pending.pop()
        yield node
        for name in _BLOCKS:
            block = getattr(node, name, None)
            if block:
                pending.extend(block)


def content_hash(data: bytes) -> str:
    """16 hex digits of SHA-256: plenty to tell two versions of one file apart."""
    return hashlib.sha256(data).hexdigest()[:16]


@dataclass(frozen=True, slots=True)
class _ParsedFile:
    digest: str
    imports: tuple[Path, ...]  # project files this one imports directly
    sent_files: tuple[str, ...]  # literal paths given to `.send_file(...)`


class SourceClosure:
    """Closures of files in one project. `root` is the project folder; import roots are it and the
    entries of `sys.path` inside it (not a virtual environment's packages)."""

    def __init__(self, root: Path, search_paths: Sequence[str] | None = None) -> None:
        self.root = root.resolve()
        roots = [self.root]
        for entry in sys.path if search_paths is None else search_paths:
            path = Path(entry or ".").resolve()
            if path in roots or not path.is_relative_to(self.root) or any(part in _INSTALLED for part in path.parts):
                continue
            if any(part in _SKIPPED_DIRS for part in path.relative_to(self.root).parts):
                continue
            roots.append(path)
        self._roots = tuple(roots)
        self._prefix = str(self.root) + "/"
        self._parsed: dict[Path, _ParsedFile | None] = {}
        self._modules: dict[str, tuple[Path, ...]] = {}
        self._packages: dict[str, Path | None] = {}
        self._closures: dict[Path, dict[str, str]] = {}
        self._sent: dict[Path, tuple[str, ...]] = {}

    def relative(self, path: Path) -> str:
        text = str(path)
        # A string prefix, not `relative_to`: this runs for every file of every closure.
        return text[len(self._prefix):] if text.startswith(self._prefix) else text

    # -- one file --------------------------------------------------------------------------------
    def _parse(self, path: Path) -> _ParsedFile | None:
        if path in self._parsed:
            return self._parsed[path]
        try:
            data = path.read_bytes()
        except OSError:
            self._parsed[path] = None
            return None
        imports: list[Path] = []
        sent: list[str] = []
        try:
            tree = ast.parse(data, filename=str(path))
        except (SyntaxError, ValueError):
            tree = None  # not importable either; its content hash still names the version
        if tree is not None:
            # Imports are statements: walking statements only is several times cheaper than every
            # node, and expressions are walked only in a file that names a call worth finding.
            calls = any(name in data for name in (b"send_file", b"import_module", b"__import__"))
            for node in ast.walk(tree) if calls else _statements(tree.body):
                if isinstance(node, ast.Import):
                    for alias in node.names:
                        imports.extend(self._module_files(alias.name))
                elif isinstance(node, ast.ImportFrom):
                    imports.extend(self._from_import(path, node))
                elif isinstance(node, ast.Call):
                    self._call(node, imports, sent)
        parsed = _ParsedFile(content_hash(data), tuple(dict.fromkeys(imports)), tuple(dict.fromkeys(sent)))
        self._parsed[path] = parsed
        return parsed

    def _call(self, node: ast.Call, imports: list[Path], sent: list[str]) -> None:
        function = node.func
        name = function.attr if isinstance(function, ast.Attribute) else function.id if isinstance(function, ast.Name) else ""
        if not node.args or not isinstance(node.args[0], ast.Constant) or not isinstance(node.args[0].value, str):
            return
        literal = node.args[0].value
        if name in ("import_module", "__import__") and not literal.startswith("."):
            imports.extend(self._module_files(literal))
        elif name == "send_file":
            sent.append(literal)

    def _from_import(self, path: Path, node: ast.ImportFrom) -> list[Path]:
        if node.level:
            base = path.parent
            for _ in range(node.level - 1):
                base = base.parent
            parts = node.module.split(".") if node.module else []
            package = base.joinpath(*parts)
            found = self._files_along(base, parts) if parts else []
        else:
            if not node.module:
                return []
            found = list(self._module_files(node.module))
            package = self._package_dir(node.module)
        if package is not None:
            for alias in node.names:  # `from package import submodule`
                for candidate in (package / f"{alias.name}.py", package / alias.name / "__init__.py"):
                    if candidate.is_file():
                        found.append(candidate)
                        break
        return found

    # -- module names to files -------------------------------------------------------------------
    def _module_files(self, name: str) -> tuple[Path, ...]:
        """The project files executed by `import name` (each package's __init__ on the way)."""
        cached = self._modules.get(name)
        if cached is not None:
            return cached
        parts = name.split(".")
        found: tuple[Path, ...] = ()
        for root in self._roots:
            if (root / f"{parts[0]}.py").is_file() or (root / parts[0]).is_dir():
                found = tuple(self._files_along(root, parts))
                break
        self._modules[name] = found
        return found

    @staticmethod
    def _files_along(base: Path, parts: Sequence[str]) -> list[Path]:
        files: list[Path] = []
        folder = base
        for part in parts:
            module = folder / f"{part}.py"
            package = folder / part
            if (package / "__init__.py").is_file():
                files.append(package / "__init__.py")
                folder = package
            elif module.is_file():
                files.append(module)
                break  # a plain module has no submodules
            elif package.is_dir():
                folder = package  # a namespace package: no file of its own
            else:
                break
        return files

    def _package_dir(self, name: str) -> Path | None:
        if name in self._packages:
            return self._packages[name]
        parts = name.split(".")
        found = None
        for root in self._roots:
            folder = root.joinpath(*parts)
            if folder.is_dir():
                found = folder
                break
        self._packages[name] = found
        return found

    # -- closures --------------------------------------------------------------------------------
    def closure(self, path: Path) -> dict[str, str]:
        """`{project-relative path: content hash}` of `path` and every project module it imports, transitively."""
        path = path if path.is_absolute() else path.resolve()
        cached = self._closures.get(path)
        if cached is not None:
            return cached
        seen: dict[Path, str] = {}
        sent: list[str] = []
        pending = [path]
        while pending:
            current = pending.pop()
            if current in seen:
                continue
            parsed = self._parse(current)
            seen[current] = parsed.digest if parsed is not None else "missing"
            if parsed is not None:
                pending.extend(module for module in parsed.imports if module not in seen)
                sent.extend(parsed.sent_files)
        closure = {self.relative(file): digest for file, digest in sorted(seen.items())}
        self._closures[path] = closure
        self._sent[path] = tuple(dict.fromkeys(sent))
        return closure

    def files(self, path: Path) -> list[Path]:
        """The closure of `path` as absolute paths (`closure` first)."""
        return [self.root / name for name in self.closure(path)]

    def sent_files(self, path: Path) -> tuple[str, ...]:
        """The literal `send_file(...)` paths written anywhere in the closure of `path`."""
        path = path if path.is_absolute() else path.resolve()
        if path not in self._sent:
            self.closure(path)
        return self._sent[path]
