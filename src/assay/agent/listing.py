"""`assay agent list`: a project's evals (id, kind, tags, description) and experiments (agent, model,
attempts, the evals each selects), as tables or one JSON document. Nothing is run.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from assay.agent.discovery import EvalEntry, ExperimentEntry

__all__ = ["ProjectListing", "list_project"]


@dataclass(frozen=True)
class ProjectListing:
    evals: Sequence[EvalEntry]
    experiments: Sequence[ExperimentEntry]
    selected: Mapping[str, list[str]]  # experiment id -> the ids of the evals it selects

    def document(self) -> dict[str, Any]:
        return {
            "evals": [
                {"id": e.id, "kind": e.eval.kind, "tags": list(e.eval.tags), "description": e.eval.description,
                 **({"group": e.group.id} if e.group is not None else {})}
                for e in self.evals
            ],
            "experiments": [
                {
                    "id": x.id, "agent": x.experiment.agent.name, "model": x.experiment.model,
                    "attempts": x.experiment.attempts, "description": x.experiment.description,
                    "labels": list(x.experiment.labels), "selectedEvalIds": self.selected[x.id],
                }
                for x in self.experiments
            ],
        }

    def tables(self) -> list[str]:
        """The evals table, then the experiments table when the project has experiments."""
        from assay.core.report.table import render_table

        rows = [[e.id, e.eval.kind, e.group.id if e.group is not None else "", ", ".join(e.eval.tags),
                 e.eval.description or ""] for e in self.evals]
        # An eval group's members run one after another in one sandbox: the group column says which run so.
        tables = [render_table("Evals", ["eval", "kind", "group", "tags", "description"], rows)]
        if self.experiments:
            rows = [
                [x.id, x.experiment.agent.name, x.experiment.model or "-", str(x.experiment.attempts),
                 str(len(self.selected[x.id])), x.experiment.description or ""]
                for x in self.experiments
            ]
            headers = ["experiment", "agent", "model", "attempts", "evals", "description"]
            tables.append(render_table("Experiments", headers, rows))
        return tables


def list_project(root: Path, tags: Sequence[str] = ()) -> ProjectListing:
    """The project's evals (only those with one of `tags`, when given) and experiments; a project
    `run` would refuse is refused here too."""
    from assay.agent.discovery import discover_evals, discover_experiments, select_evals
    from assay.agent.plan import check_experiment_prefixes, check_tags
    from assay.agent.project import EXPERIMENTS_DIR, load_dotenv, load_project_config

    load_project_config(root)
    load_dotenv(root)
    every = discover_evals(root)
    check_tags(tags, every)
    evals = [entry for entry in every if not tags or any(t in entry.eval.tags for t in tags)]
    experiments = discover_experiments(root) if (root / EXPERIMENTS_DIR).is_dir() else []
    for entry in experiments:
        check_experiment_prefixes(entry, every)
    selected = {entry.id: [e.id for e in select_evals(entry, evals)] for entry in experiments}
    return ProjectListing(evals, experiments, selected)
