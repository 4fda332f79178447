"""The eval group `flow`: its members run one after another in one sandbox, the workdir reset between them."""

from assay.agent import define_eval_group

flow = define_eval_group(["flow/login", "flow/checkout"], description="a shop session, one step per eval")
