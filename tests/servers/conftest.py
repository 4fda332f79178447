"""Expose the fake OpenAI-compatible server fixture to this directory's tests.

Other test directories do the same in their conftest: `from servers.fake_openai import fake_openai`.
"""

from servers.fake_openai import fake_openai  # noqa: F401
