// The doc kind's path resolver for JavaScript adapters, with the same rules as assay/doc/paths.py:
// safe ids by full match, relative paths only, lexical and symlink-aware (realpath) containment.
import fs from "node:fs";
import path from "node:path";

const SAFE_ID = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;

const realpathLoose = (target) => {
  // Resolve symlinks in the part that exists; keep the rest as written (like Python's realpath).
  let current = path.resolve(target);
  const rest = [];
  for (;;) {
    try {
      return path.join(fs.realpathSync.native(current), ...rest);
    } catch {
      const parent = path.dirname(current);
      if (parent === current) return path.join(current, ...rest);
      rest.unshift(path.basename(current));
      current = parent;
    }
  }
};

const within = (base, target) => {
  const relative = path.relative(base, target);
  return relative === "" || (!path.isAbsolute(relative) && relative.split(path.sep)[0] !== "..");
};

export const isContained = (base, target) =>
  within(path.resolve(base), path.resolve(target)) && within(realpathLoose(base), realpathLoose(target));

const toPosix = (value) => value.split(path.sep).join("/");

export function createPathResolver({ repoRoot, configDir, suiteRoot, resultsRoot }) {
  const contained = (base, target, label) => {
    if (!isContained(base, target)) throw new Error(`${label} escapes ${base}`);
    return path.resolve(target);
  };
  const resolveWithin = (base, relative, label) => {
    if (typeof relative !== "string" || relative.trim() === "") throw new Error(`${label} is required`);
    if (path.isAbsolute(relative) || relative.startsWith("\\")) {
      throw new Error(`${label} must be a relative path, got ${relative}`);
    }
    return contained(base, path.join(base, relative), label);
  };
  const relative = (base) => (target) => toPosix(path.relative(base, path.resolve(target)));
  return {
    repoRoot,
    configDir,
    suiteRoot,
    resultsRoot,
    resolveRunDir(runId) {
      if (typeof runId !== "string" || !SAFE_ID.test(runId) || runId.includes("\n")) {
        throw new Error("run id must be an id, not a path");
      }
      return contained(resultsRoot, path.join(resultsRoot, runId), "run id");
    },
    resolveResultArtifact(runDir, relativePath, label = "result artifact") {
      const dir = contained(resultsRoot, runDir, "run directory");
      return resolveWithin(dir, relativePath, label);
    },
    resolveSuitePath: (relativePath, label = "suite path") => resolveWithin(suiteRoot, relativePath, label),
    resolveRepoPath: (relativePath, label = "repo path") => resolveWithin(repoRoot, relativePath, label),
    relativeToRepo: relative(repoRoot),
    relativeToSuite: relative(suiteRoot),
    relativeToResults: relative(resultsRoot),
  };
}

export function createHelpers({ marker, roots }) {
  return { [marker]: createPathResolver(roots) };
}
