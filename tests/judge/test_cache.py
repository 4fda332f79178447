"""The content-addressed call cache: stable keys, directory storage, read-only wrapping."""

from __future__ import annotations

import pytest

from assay.judge import DirectoryCallCache, call_cache_key
from assay.judge.errors import JudgeCacheError


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



def test_a_file_where_the_cache_keeps_a_folder_is_named_with_the_fix(tmp_path):
    """It raised a bare `NotADirectoryError`: a doc command said `internal error: NotADirectoryError: …` and every
    agent judge assertion `judge-call-failed: NotADirectoryError: [Errno 20] …`, naming neither the cache nor the fix."""
    root = tmp_path / "cache"
    key = call_cache_key("m", "p", {})
    root.mkdir()
    (root / key[:2]).write_text("not a shard\n", encoding="utf-8")
    cache = DirectoryCallCache(root)
    for done, call in (("read", lambda: cache.get(key)), ("written", lambda: cache.put(key, b"v"))):
        with pytest.raises(JudgeCacheError) as caught:
            call()
        assert str(caught.value) == (
            f"the judge cache {root} cannot be {done}: {root / key[:2]} is a file where the cache keeps a folder; "
            "move aside what is in the way, or fix the folder's permissions"
        )
    assert (root / key[:2]).read_text(encoding="utf-8") == "not a shard\n"  # what is in the way is the user's


def test_a_folder_where_an_entry_belongs_names_the_entry(tmp_path):
    root = tmp_path / "cache"
    key = call_cache_key("m", "p", {})
    (root / key[:2] / key).mkdir(parents=True)
    with pytest.raises(JudgeCacheError, match=rf"cannot be read: Is a directory \({root / key[:2] / key}\)"):
        DirectoryCallCache(root).get(key)
