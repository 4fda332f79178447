"""The coding agent on its (pretend) model; each eval brings the sandbox its repository lives in."""

from agents.fixer import fixer_agent

from assay.agent import Experiment

fixer = Experiment(agent=fixer_agent(), model="demo-coder", description="deterministic local coding agent")
