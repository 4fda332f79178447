"""Cloud video stores as a newcomer types them, against the real moto S3 server of test_cloud_store.py."""

from __future__ import annotations

import pytest

pytest.importorskip("boto3")
pytest.importorskip("moto")

import yaml
from test_cloud_store import _eval_dir, _invoke, _put, cache, credentials, moto_server, video_bytes  # noqa: F401

BUCKET_REFUSED = ("bucket {bucket!r} of video store 'team' is not a bucket name: set video_stores.team.bucket in "
                  "config.yaml to the bucket's name alone (team-videos), without s3:// or a path")


@pytest.fixture(autouse=True)
def _own_store(tmp_path, monkeypatch):
    monkeypatch.setenv("ASSAY_STORE", str(tmp_path / "store" / "assay.db"))


def _with_bucket(eval_dir, bucket: str) -> None:
    config_file = eval_dir / "config.yaml"
    config = yaml.safe_load(config_file.read_text())
    config["video_stores"]["team"]["bucket"] = bucket
    config_file.write_text(yaml.safe_dump(config))


@pytest.mark.parametrize("bucket", ["s3://team-videos", "team-videos/", "s3://team-videos/clips"])
def test_a_bucket_written_as_a_url_or_path_names_the_setting_and_the_name_to_give(
    moto_server, credentials, cache, tmp_path, video_bytes, bucket  # noqa: F811
):
    """`bucket: s3://team-videos` (as the console shows it) failed with botocore's "Parameter validation failed:
    Invalid bucket name …" and two regular expressions, naming neither the config key nor what to write."""
    ref = _put(moto_server, "typo/clip.mp4", video_bytes)
    eval_dir = _eval_dir(tmp_path, moto_server, {"intro": {"store": "team", "key": ref.key, "sha256": ref.sha256}})
    _with_bucket(eval_dir, bucket)
    clip = tmp_path / "clip.mp4"
    clip.write_bytes(video_bytes)
    refused = BUCKET_REFUSED.format(bucket=bucket)

    uploaded = _invoke("upload", str(clip), "--store", "team", "--eval-dir", str(eval_dir))
    assert (uploaded.exit_code, uploaded.output) == (2, f"Could not upload cloud video: {refused}\n")

    pulled = _invoke("pull", "--eval-dir", str(eval_dir))
    case_file = (eval_dir / "cases" / "intro.yaml").resolve()
    assert (pulled.exit_code, pulled.output) == (2, f"Could not pull cloud videos: {case_file}: {refused}\n")

    _with_bucket(eval_dir, "team-videos")  # the name alone, as the line says: the same pull works
    assert _invoke("pull", "--eval-dir", str(eval_dir)).exit_code == 0
