"""The local results viewer (`assay view`): runs, run pages, unit drill-down and compare, live or exported.

Served on the shared loopback web app (`assay.web.app`); the pages are vanilla JS with no build step.
"""
