"""Kind-independent machinery shared by video, agent and document evals.

Nothing in `assay.core` imports from a kind (`assay.video`, `assay.agent`, `assay.doc`)."""
