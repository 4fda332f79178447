# --8<-- [start:pytest]
pip install /path/to/assay  # the plugin comes with it: nothing to configure
cd my-project              # holds evals/, experiments/ and a [tool.assay] table
pytest                     # one test per eval × experiment × attempt
pytest -k refund           # select by eval id
pytest -m orders           # select by tag
# --8<-- [end:pytest]
