// Generic keyword adapter: a finding per expected item, covered when the candidate contains its
// required_text exactly. Replace these hooks with your suite's own semantics.

export const gradeCandidate = ({ candidateText, expectedItems }) => {
  const items = expectedItems?.items ?? [];
  const findings = items.map((item) => {
    if (typeof item.required_text !== "string") {
      // A misspelt key would otherwise grade as "missing" (a red verdict) instead of a broken fixture.
      throw new Error(`expected item ${item.id ?? "(no id)"} needs required_text, a string`);
    }
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

export const validateFixtures = async ({ manifests }) => {
  for (const { manifest, relativePath } of manifests) {
    if (!manifest.artifacts.some((artifact) => artifact.role === "grader_input")) {
      throw new Error(`${relativePath} needs at least one grader_input artifact`);
    }
  }
};
