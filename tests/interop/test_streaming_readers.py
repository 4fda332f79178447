"""The pieces that keep an import's memory flat: the JSON walker, the zip member reader (zip64 and
zstd included), the JUnit reader letting go of each testcase, and `--map` rules."""

from __future__ import annotations

import json
import warnings
import zipfile

import pytest

from assay.core.interop import inspect_log, jsonstream
from assay.core.interop.jsonstream import JsonStream, JsonStreamError, top_level_keys
from assay.core.interop.junit_xml import read as read_junit
from assay.core.interop.unit_map import UnitIdMap
from assay.core.interop.zipstream import find_members, iter_members, member_chunks, member_names, read_member, read_members
from assay.errors import UsageError


def test_the_json_walker_yields_each_item_and_skips_values_too_large_to_buffer(tmp_path, monkeypatch):
    monkeypatch.setattr(jsonstream, "CHUNK", 64)  # values cross many chunk boundaries
    monkeypatch.setattr(jsonstream, "DESCEND_ABOVE", 256)  # and the skipped one is walked into
    document = {"version": 2, "eval": {"task": "t", "numbers": [1.5, 2, 30000]}, "samples": [{"id": n, "text": "é" * n} for n in range(40)],
                "reductions": [{"scorer": "s", "samples": [{"value": n} for n in range(200)]}], "tail": 12345}
    path = tmp_path / "log.json"
    path.write_text(json.dumps(document, indent=1), encoding="utf-8")
    with JsonStream.open(path) as stream:
        seen: dict[str, object] = {}
        for key in stream.keys():
            if key == "samples":
                seen[key] = list(stream.items())
            elif key == "reductions":
                stream.skip()
            else:
                seen[key] = stream.value()
        stream.end()
    assert seen == {key: value for key, value in document.items() if key != "reductions"}
    assert top_level_keys(path) == ["version", "eval", "samples", "reductions", "tail"]


def test_sniffing_a_large_log_stops_at_its_first_large_value(tmp_path):
    path = tmp_path / "big.json"
    samples = ",".join(json.dumps({"id": index, "text": "x" * 100}) for index in range(60_000))  # ~7 MB
    path.write_text('{"version": 2, "status": "success", "eval": {"task": "t"}, "samples": [' + samples + '], "tail": 1}')
    # The sniff reads up to its budget, not the whole file: it sees the keys before the samples and stops there.
    assert top_level_keys(path, budget=1 << 20) == ["version", "status", "eval", "samples"]
    assert top_level_keys(path, budget=64 << 20) == ["version", "status", "eval", "samples", "tail"]


def test_a_cut_document_is_an_error_saying_where(tmp_path):
    path = tmp_path / "cut.json"
    path.write_text('{"samples": [{"id": 1}, {"id": 2')
    with JsonStream.open(path) as stream, pytest.raises(JsonStreamError, match=r"cut.json: not valid JSON: .* \(at character 32\)"):
        for key in stream.keys():
            list(stream.items())


def test_zip_members_are_read_one_at_a_time_past_65535_entries(tmp_path):
    path = tmp_path / "many.eval"
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:  # > 65,535 members: a zip64 directory
        for index in range(66_000):
            archive.writestr(f"samples/{index}_epoch_1.json", b'{"id": %d}' % index, compress_type=zipfile.ZIP_STORED)
        archive.writestr("header.json", json.dumps({"eval": {"task": "many"}}))
    found = [json.loads(content)["id"] for _, content in iter_members(path, lambda name: name.startswith("samples/"))]
    assert found == list(range(66_000))
    assert json.loads(read_members(path, {"header.json"})["header.json"]) == {"eval": {"task": "many"}}
    assert member_names(path, limit=2) == ["samples/0_epoch_1.json", "samples/1_epoch_1.json"]


def test_zstd_members_are_read(tmp_path):
    zstandard = pytest.importorskip("zstandard", reason="the interop extra: pip install 'assay[interop]'")
    path = tmp_path / "z.eval"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("header.json", b"")
    # Rewrite the one member as Inspect writes it: zstd, method 93.
    content = json.dumps({"eval": {"task": "z"}}).encode()
    packed = zstandard.ZstdCompressor().compress(content)
    raw = path.read_bytes()
    local = raw.index(b"PK\x03\x04")
    central = raw.index(b"PK\x01\x02")
    name = b"header.json"
    import struct
    import zlib
    header = struct.pack("<4sHHHHHIIIHH", b"PK\x03\x04", 63, 0, 93, 0, 0, zlib.crc32(content), len(packed), len(content), len(name), 0) + name
    directory = struct.pack("<4sHHHHHHIIIHHHHHII", b"PK\x01\x02", 63, 63, 0, 93, 0, 0, zlib.crc32(content), len(packed),
                            len(content), len(name), 0, 0, 0, 0, 0, 0) + name
    end = struct.pack("<4sHHHHIIH", b"PK\x05\x06", 0, 0, 1, 1, len(directory), len(header) + len(packed), 0)
    path.write_bytes(header + packed + directory + end)
    assert local == 0 and central > 0
    assert json.loads(read_members(path, {"header.json"})["header.json"]) == {"eval": {"task": "z"}}


def test_a_member_is_inflated_a_piece_at_a_time_however_well_it_packed(tmp_path):
    path = tmp_path / "packed.zip"
    content = b"\0" * (8 << 20) + b"end"  # deflates to ~8 KB
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("big", content)
    member = find_members(path, {"big"})["big"]
    pieces = [len(piece) for piece in member_chunks(path, member, 1 << 16)]
    assert max(pieces) <= 1 << 16 and sum(pieces) == len(content)


def test_sample_summaries_are_decoded_one_at_a_time_as_the_member_is_inflated(tmp_path, monkeypatch):
    monkeypatch.setattr(inspect_log, "_SUMMARY_CHUNK", 7)  # summaries cross many piece boundaries
    # Odd summaries have chat messages as input: each an object whose first key is "id", one of them
    # holding the separator's text in a string too.
    summaries = [{"id": index, "epoch": 1, "input": [{"id": f"m{index}", "content": '},{"id":'}, {"id": "u", "role": "user"}]
                  if index % 2 else "question", "scores": {"s": {"value": "C"}}} for index in range(60)]
    for layout, text in (("compact", json.dumps(summaries, separators=(",", ":"))), ("indented", json.dumps(summaries, indent=2)),
                         ("empty", "[]")):
        path = tmp_path / f"{layout}.eval"
        with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
            archive.writestr("summaries.json", text)
        member = find_members(path, {"summaries.json"})["summaries.json"]
        items = inspect_log._summary_items(path, member)
        read, held = [], 0
        for item in items:
            read.append(item)
            held = max(held, len(items.gi_frame.f_locals["pending"]))
        assert read == (summaries if layout != "empty" else []), layout
        if layout == "compact":  # Inspect's own layout: one summary at a time is held, never the list
            assert held < 2 * max(len(json.dumps(summary)) for summary in summaries)


def test_summaries_that_are_not_a_list_are_an_error_naming_the_member(tmp_path):
    path = tmp_path / "odd.eval"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("summaries.json", '{"id": 1}')
    member = find_members(path, {"summaries.json"})["summaries.json"]
    with pytest.raises(UsageError, match=r"odd.eval: member summaries.json is not a list of sample summaries"):
        list(inspect_log._summary_items(path, member))


def test_junit_testcases_are_let_go_of_as_they_are_read(tmp_path):
    path = tmp_path / "big.xml"
    cases = "".join(f'<testcase classname="c" name="t{index}" time="0.1"/>' for index in range(20_000))
    path.write_text(f'<testsuites><testsuite name="s" tests="20000" failures="0" errors="0" skipped="0">{cases}</testsuite></testsuites>')
    log = read_junit(path)
    reading = log.units.gi_frame.f_locals["self"]  # the parse in progress
    seen = held = 0
    for _ in log.units:
        seen += 1
        held = max(held, *(len(element) for element in reading.stack))
    # The suite holds only what the parser has read ahead of the testcase being converted, never them all.
    assert seen == 20_000 and log.summary["tests"] == 20_000
    assert held < 1_000


def test_map_rules_apply_in_order_and_pair_files_read_json_and_csv(tmp_path):
    rules = UnitIdMap.parse([r"^(.*)#(\d+)$=>evals/\1#\2", r"evals/3#=>evals/spain#"])
    assert rules.apply("3#2") == "evals/spain#2" and rules.apply("france#1") == "evals/france#1"
    pairs = tmp_path / "pairs.json"
    pairs.write_text(json.dumps({"a": "x", "b": "y"}))
    assert UnitIdMap.parse([f"@{pairs}"]).map_verdicts({"a": "passed", "c": "failed"}) == {"x": "passed", "c": "failed"}
    listed = tmp_path / "pairs.csv"
    listed.write_text("a,x\nb,y\n")
    assert UnitIdMap.parse([f"@{listed}"]).apply("b") == "y"
    for bad, message in (("no-arrow", "write PATTERN=>REPLACEMENT"), ("(=>x", "missing \\)"), (r"a=>\2", "invalid group reference"),
                         (f"@{tmp_path / 'none.json'}", "none.json")):
        with pytest.raises(UsageError, match=message):
            UnitIdMap.parse([bad])
    # Each regular-expression error also says what to write instead.
    for bad, message in (("(=>x", r"in the pattern '\(' \(a Python regular expression: write \\\( \\\) "),
                         (r"a=>\2", r"in the replacement '\\2' \(the pattern has no group to refer to: put the part to keep in \( \)\)$"),
                         (r"(a)=>\2", r"\(the pattern has one group: \\1 refers to it\)$"),
                         (r"(a)(b)=>\3", r"\(the pattern has 2 groups: \\1 to \\2 refer to them\)$")):
        with pytest.raises(UsageError, match=message):
            UnitIdMap.parse([bad])


def test_the_pairing_line_counts_map_files_as_files():
    """`--map @pairs.csv` was reported as "(1 --map rule)"."""
    from assay.core.interop.unit_map import Pairing

    assert Pairing(3, 0, 1, ("@pairs.csv",)).sentence().startswith("Mapped the baseline's unit ids (1 --map file): 3 unit(s)")
    assert Pairing(3, 0, 1, ("a=>b", "@p.json", "c=>d")).sentence().startswith(
        "Mapped the baseline's unit ids (2 --map rules and 1 --map file): ")
    assert Pairing(3, 0, 1, ()).sentence().startswith("3 unit(s) paired")


def test_members_are_found_by_name_in_the_directory_without_walking_it(tmp_path, monkeypatch):
    from assay.core.interop import zipstream

    path = tmp_path / "log.eval"
    with zipfile.ZipFile(path, "w") as archive, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a name written twice, as Inspect supersedes a member
        archive.writestr("samples/header.json", b"not the header")  # ends with a wanted name
        archive.writestr("header.json", b'{"first": true}')
        for index in range(2_000):
            archive.writestr(f"samples/{index}_epoch_1.json", b"{}")
        archive.writestr("header.json", b'{"first": false}', compress_type=zipfile.ZIP_DEFLATED)
        archive.writestr("summaries.json", b"[]")
    wanted = {"header.json", "summaries.json", "_journal/start.json"}
    walked = {member.name: member for member in zipstream._walk(path, wanted.__contains__)}

    def no_walk(*_):
        raise AssertionError("the directory was walked entry by entry")

    with monkeypatch.context() as patched:
        patched.setattr(zipstream, "_entries", no_walk)
        found = find_members(path, wanted)
    assert found == walked and set(found) == {"header.json", "summaries.json"}
    assert read_member(path, found["header.json"]) == b'{"first": false}'  # the last one written
    monkeypatch.setattr(zipstream, "_DIRECTORY_READ_WHOLE", 1_000)  # a directory too large to read whole is walked
    assert find_members(path, wanted) == walked


def test_a_map_file_that_cannot_be_read_says_what_at_file_names(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "latin1.json").write_bytes(b'{"caf\xe9": "x"}')
    for given, problem in (("@nofile.json", "No such file or directory (a path relative to the current folder)"),
                           ("@latin1.json", "not UTF-8 text"), (f"@{tmp_path}", "Is a directory")):
        with pytest.raises(UsageError) as raised:
            UnitIdMap.parse([given])
        message = str(raised.value)
        assert message.startswith(f"--map {given}: {problem}") and "@FILE names a file of id pairs" in message, message
        assert "--map 'PATTERN=>REPLACEMENT'" in message


def test_a_replacement_naming_a_group_the_pattern_lacks_is_one_usage_error(tmp_path):
    """`--map '(?P<x>a)=>\\g<y>'` ended `runs compare` in a traceback, exit 1 (re raises IndexError for it)."""
    for bad, message in ((r"(?P<x>a)=>\g<y>", r"unknown group name 'y' in the replacement '\\g<y>' \(the pattern has one group: "
                                              r"\\1 refers to it; named x\)$"),
                         (r"(a)=>\g<y>", r"unknown group name 'y' .*\(the pattern has one group: \\1 refers to it\)$")):
        with pytest.raises(UsageError, match=message):
            UnitIdMap.parse([bad])


def test_a_pairs_file_giving_an_id_twice_or_no_pair_at_all_is_refused(tmp_path):
    """A baseline id listed twice with two partners kept the last one silently, and an empty file mapped nothing
    while the output said a --map file was applied."""
    twice_csv = tmp_path / "twice.csv"
    twice_csv.write_text("before,after\nfrance#1,capitals/france#1\nfrance#1,capitals/peru#1\n")
    twice_json = tmp_path / "twice.json"
    twice_json.write_text('{"france#1": "capitals/france#1", "france#1": "capitals/peru#1"}')
    for path in (twice_csv, twice_json):
        with pytest.raises(UsageError, match=rf"^--map @{path}: pair 2 maps 'france#1' to 'capitals/peru#1', and an earlier "
                                             r"pair maps it to 'capitals/france#1'; give each baseline id once$"):
            UnitIdMap.parse([f"@{path}"])
    same = tmp_path / "same.csv"
    same.write_text("a,x\na,x\n")  # the same pair twice is no contradiction
    assert UnitIdMap.parse([f"@{same}"]).apply("a") == "x"
    for name, text in (("empty.csv", ""), ("header.csv", "before,after\n"), ("empty.json", "{}"), ("list.json", "[]")):
        path = tmp_path / name
        path.write_text(text)
        with pytest.raises(UsageError, match=rf"^--map @{path}: the file holds no id pairs; @FILE names"):
            UnitIdMap.parse([f"@{path}"])


def test_a_binary_file_read_as_json_says_it_is_not_json_text(tmp_path):
    """`runs import --format inspect` of a binary file printed Python's `UnicodeDecodeError: 'utf-8' codec can't …`."""
    binary = tmp_path / "log.json"
    binary.write_bytes(b"\x89PNG\r\n\x1a\n\xd5\xff" * 100)
    with pytest.raises(JsonStreamError, match=rf"^{binary}: not JSON text: its bytes are not UTF-8 \(invalid start byte\)"):
        with JsonStream.open(binary) as stream:
            stream.peek()
