"""assay: an evaluation harness for AI-powered applications.

Video, agent and document evals share one core: scheduling, comparisons, gates and reports.
"""

from assay import _method_code

__version__ = "0.1.0"

# Before any module of the package makes its dataclasses: their methods' compiled code is kept between runs.
_method_code.install()
