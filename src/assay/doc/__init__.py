"""Document evals (eval-kit's model): suite config, cases, adapters, grading, model judges, bundles.

The `assay doc` commands live in `assay.cli.doc`; each command's work is one module here.
"""
