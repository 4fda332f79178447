# The calculator under fixtures/ is the repository the agent fixes; its failing test is the task, not ours.
collect_ignore = ["fixtures"]
