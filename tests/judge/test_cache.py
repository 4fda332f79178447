"""The content-addressed call cache: stable keys, directory storage, read-only wrapping."""

from __future__ import annotations

import pytest

from assay.judge import DirectoryCallCache, call_cache_key


def test_key_depends_on_model_prompt_and_input_but_not_key_order():
    key = call_cache_key("m", [{"role": "user", "content": "p"}], {"a": 1, "b": 2})
    assert key == call_cache_key("m", [{"role": "user", "content": "p"}], {"b": 2, "a": 1})
    assert key != call_cache_key("m2", [{"role": "user", "content": "p"}], {"a": 1, "b": 2})
    assert key != call_cache_key("m", [{"role": "user", "content": "q"}], {"a": 1, "b": 2})
    assert key != call_cache_key("m", [{"role": "user", "content": "p"}], {"a": 1, "b": 3})


def test_directory_cache_round_trips_and_deletes(tmp_path):
    cache = DirectoryCallCache(tmp_path / "cache")
    key = call_cache_key("m", "p", {})
    assert cache.get(key) is None
    cache.put(key, b"value")
    assert cache.get(key) == b"value"
    assert (tmp_path / "cache" / key[:2] / key).read_bytes() == b"value"
    cache.delete(key)
    assert cache.get(key) is None


def test_directory_cache_refuses_keys_that_could_name_paths(tmp_path):
    with pytest.raises(ValueError):
        DirectoryCallCache(tmp_path).put("../../escape", b"x")

