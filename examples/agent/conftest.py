# `sandbox/` is a project of its own (the coding-agent example): pytest run here collects this project only.
collect_ignore = ["sandbox"]
