# fixtures/ holds the repository the agent fixes, not tests of ours: its test_calc.py fails on purpose
# (that is the task), so `pytest` here must not collect it.
collect_ignore = ["fixtures"]
