"""Document evals (eval-kit's model): suite config, cases, adapters, grading, model judges, bundles.

The `assay doc` commands live in `assay.cli.doc`; each command's work is one module here.

The package offers eval-kit's programmatic API under Python names (spec doc.md §2.11), each imported
from its module on first use so `import assay.doc` stays cheap: `from assay.doc import assess_coverage`.
"""

from __future__ import annotations

from assay.core.lazy_names import lazy_names

_MODULES = {
    "assay.doc.paths": ('assert_safe_id', 'PathResolver'),
    "assay.doc.artifacts": ('default_run_id', 'artifact_record', 'normalize_legacy_manifest'),
    "assay.doc.verdict": ('aggregate_verdict', 'critical_blocker_count', 'VerdictPolicy'),
    "assay.doc.pointwise": ('POINTWISE_VERDICTS', 'count_pointwise_verdicts', 'format_pointwise_calibration_summary', 'format_pointwise_verdict_counts', 'validate_pointwise_run_metadata'),
    "assay.doc.config": ('DEFAULT_CONFIG_PATH', 'load_suite'),
    "assay.doc.bootstrap": ('init_suite',),
    "assay.doc.doctor": ('run_doctor',),
    "assay.doc.text_grading": ('normalize', 'candidate_segments', 'includes_any', 'includes_all', 'assess_coverage', 'grade_facts'),
    "assay.doc.cases": ('configured_manifest_paths', 'resolve_case', 'resolve_case_manifest_path', 'discover_case_ids'),
    "assay.doc.grade": ('run_case',),
    "assay.doc.generate": ('generate_candidate',),
    "assay.doc.coverage": ('judge_coverage',),
    "assay.doc.manual_report": ('compile_report',),
    "assay.doc.fixtures": ('validate_fixtures',),
}

__getattr__, __dir__ = lazy_names(globals(), _MODULES)
__all__ = sorted(name for names in _MODULES.values() for name in names)
