"""assay: an evaluation harness for AI-powered applications.

Video, agent and document evals share one core: scheduling, comparisons, gates and reports.
"""

__version__ = "0.1.0"
