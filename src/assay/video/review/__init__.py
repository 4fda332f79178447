"""`assay video review`: the local browser editor for a video eval's cases and timed expectations.

`server` holds the HTTP API, `documents` and `edits` what it reads and writes, `static/` the UI.
"""
