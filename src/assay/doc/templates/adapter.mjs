// Generic keyword adapter: a finding per expected item, covered when the candidate contains its
// required_text exactly. Replace these hooks with your suite's own semantics.

import { readFileSync } from "node:fs";
import { basename, dirname, posix, resolve } from "node:path";

// An item key one or two typos away from a field it lacks ("severty"): read as absent, it would
// silently grade with the default. Other extra keys are the suite's own and are left alone.
const ITEM_FIELDS = ["id", "kind", "severity", "required_text"];
const editDistance = (a, b) => {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i += 1) {
    const current = [i];
    for (let j = 1; j <= b.length; j += 1) {
      current[j] = Math.min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    previous = current;
  }
  return previous[b.length];
};
const misspeltKey = (item) => {
  if (item === null || typeof item !== "object") return undefined;
  for (const key of Object.keys(item)) {
    if (ITEM_FIELDS.includes(key)) continue;
    const meant = ITEM_FIELDS.find(
      (field) => !(field in item) && editDistance(key.toLowerCase(), field) <= (field.length <= 4 ? 1 : 2),
    );
    if (meant) return [key, meant];
  }
  return undefined;
};

// The case's expected items, checked: a misspelt key or an empty value is a broken fixture (exit 2),
// never a verdict (no items would grade green, a missing required_text red).
const checkedItems = (expectedItems, where = "expected-items.json") => {
  if (expectedItems === undefined) {
    throw new Error(
      'the case has no expected-items.json: add {"role": "grader_input", "path": "expected-items.json"} to its case-manifest.json artifacts',
    );
  }
  const items = expectedItems?.items;
  if (!Array.isArray(items)) {
    throw new Error(`${where} needs "items", a list of {"id", "required_text"}`);
  }
  for (const item of items) {
    const misspelt = misspeltKey(item);
    if (misspelt) {
      throw new Error(
        `${where}: expected item ${item?.id ?? "(no id)"} has "${misspelt[0]}", which is no item field; rename it to "${misspelt[1]}"`,
      );
    }
    if (typeof item?.required_text !== "string" || item.required_text === "") {
      throw new Error(`${where}: expected item ${item?.id ?? "(no id)"} needs required_text, a non-empty string`);
    }
    for (const key of ["id", "kind", "severity"]) {
      if ((key === "id" || key in item) && (typeof item[key] !== "string" || item[key] === "")) {
        throw new Error(`${where}: expected item ${item.id ?? "(no id)"} needs ${key}, a non-empty string`);
      }
    }
  }
  return items;
};

export const gradeCandidate = ({ candidateText, expectedItems }) => {
  const findings = checkedItems(expectedItems).map((item) => {
    const covered = candidateText.includes(item.required_text);
    return {
      id: item.id,
      kind: item.kind ?? "generic",
      severity: item.severity ?? "medium",
      verdict: covered ? "covered" : "missing",
      evidence: covered ? `found: ${item.required_text}` : `not found: ${item.required_text}`,
    };
  });
  const verdict = findings.every((finding) => finding.verdict === "covered") ? "green" : "red";
  return { verdict, findings };
};

export const renderDeterministicReport = ({ caseId, grades, findings }) =>
  [
    `# Eval Report: ${caseId}`,
    "",
    `Verdict: ${grades.verdict}`,
    "",
    ...findings.map(
      (finding) =>
        `- ${finding.id} (${finding.kind}, ${finding.severity}): ${finding.verdict} - ${finding.evidence}`,
    ),
  ].join("\n");

// `doctor` and `validate-fixtures` run this, so a broken expected-items.json fails there, before any run.
export const validateFixtures = async ({ manifests }) => {
  for (const { manifest, fullPath, relativePath } of manifests) {
    const expected = manifest.artifacts.filter(
      (artifact) => artifact.role === "grader_input" && basename(artifact.path) === "expected-items.json",
    );
    if (expected.length === 0) {
      throw new Error(
        `${relativePath} is missing a grader_input artifact: expected-items.json, the items gradeCandidate checks`,
      );
    }
    for (const artifact of expected) {
      const items = JSON.parse(readFileSync(resolve(dirname(fullPath), artifact.path), "utf8"));
      checkedItems(items, posix.join(posix.dirname(relativePath), artifact.path));
    }
  }
};

// Model judges (`assay doc judge-coverage`, `judge-pairwise`, `generate` with
// evals/eval-kit.model-judge.config.json): the hooks below hand the bundled prompts the case's
// material. The judge sees each expected item with its id, kind, severity and source.

const artifactText = (artifacts, role) =>
  artifacts
    .filter((artifact) => artifact.role === role)
    .map((artifact) => readFileSync(artifact.fullPath, "utf8"))
    .join("\n\n");

const expectedItemsOf = (artifacts) => {
  const visible = artifacts.filter((artifact) => artifact.role === "generation_visible").map((artifact) => artifact.path);
  const sources = visible.length ? visible : ["input"];
  return artifacts
    .filter((artifact) => artifact.role === "grader_input")
    .flatMap((artifact) => JSON.parse(readFileSync(artifact.fullPath, "utf8")).items ?? [])
    .map((item) => ({
      item_id: item.id,
      kind: item.kind ?? "generic",
      severity: item.severity ?? "medium",
      required_text: item.required_text,
      source_refs: sources,
    }));
};

// The run metadata the judge must copy into its answer (assay checks it).
const echo = ({ caseId, model, provider, promptVersion, rubricVersion }) => ({
  case_id: caseId,
  model,
  provider,
  prompt_version: promptVersion,
  rubric_version: rubricVersion,
});

export const resolveGenerationVars = ({ artifacts }) => ({
  source_material: artifactText(artifacts, "generation_visible"),
  candidate_instructions: "Write the document this case describes, from the source material only.",
  output_format: "Markdown",
});

export const resolvePointwiseVars = (input) => {
  const expected = expectedItemsOf(input.artifacts);
  return {
    ...echo(input),
    source_material: artifactText(input.artifacts, "generation_visible"),
    case_rubric: artifactText(input.artifacts, "rubric"),
    expected_items: JSON.stringify(expected, null, 2),
    candidate_path: input.resolver.relativeToRepo(input.candidatePath),
    candidate: input.candidateContent,
    _expectedItemsForCanonicalization: expected, // `_` variables never reach the model
  };
};

// Keep the judge's verdicts, but each item's kind, severity and sources as the case states them.
export const canonicalizeExpectedItemMetadata = (actualItems, expectedItems) => {
  const expected = new Map(expectedItems.map((item) => [item.item_id, item]));
  return actualItems
    .filter((item) => expected.has(item.item_id))
    .map((item) => {
      const { kind, severity, source_refs } = expected.get(item.item_id);
      return { ...item, kind, severity, source_refs };
    });
};

export const resolvePairwiseVars = (input) => {
  const order = input.randomizedOrder;
  return {
    ...echo(input),
    source_material: artifactText(input.artifacts, "generation_visible"),
    case_rubric: artifactText(input.artifacts, "rubric"),
    expected_items: JSON.stringify(expectedItemsOf(input.artifacts), null, 2),
    candidate_a: input.candidateAContent,
    candidate_b: input.candidateBContent,
    randomization_method: order.method,
    randomization_seed: order.seed,
    original_order: order.original_order.join(", "),
    candidate_order: order.candidate_order.join(", "),
  };
};
