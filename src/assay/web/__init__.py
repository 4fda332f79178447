"""Local web UIs of assay: the shared loopback-only Starlette app and its helpers.

`assay.web.app` builds the guarded app; each UI (video review, results viewer) adds its own routes.
"""
