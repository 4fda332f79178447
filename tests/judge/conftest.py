"""Judge tests use the shared fake OpenAI-compatible server fixture."""

from servers.fake_openai import fake_openai  # noqa: F401
