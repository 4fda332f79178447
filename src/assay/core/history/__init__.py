"""Verdicts across runs: each unit's history from the store, how flaky the suite is, and the
four-way verdict (regressed, improved, unchanged, inconclusive) a comparison hands back."""
