"""jitr.fileio: the one atomic write (temp name beside the target, fsync, rename)."""

import json
import os
import stat

import pytest

from jitr import fileio


def _names(folder):
  return sorted(os.listdir(folder))


def test_text_and_json_round_trip_leave_only_the_target(tmp_path):
  path = tmp_path / "sub" / "a.txt"  # the folder is created
  fileio.write_text_atomic(path, "héllo\n")
  assert path.read_bytes() == "héllo\n".encode()
  fileio.write_json_atomic(tmp_path / "b.json", {"z": 1, "a": [1.5, None]})
  assert (tmp_path / "b.json").read_text() == '{\n  "a": [\n    1.5,\n    null\n  ],\n  "z": 1\n}\n'
  fileio.write_json_atomic(tmp_path / "c.json", {"w": "é"}, indent=None, ensure_ascii=False)
  assert (tmp_path / "c.json").read_text(encoding="utf-8") == '{"w": "é"}\n'
  assert _names(tmp_path) == ["b.json", "c.json", "sub"]
  assert _names(tmp_path / "sub") == ["a.txt"]


def test_replaces_an_existing_file_with_normal_permissions(tmp_path):
  path = tmp_path / "a.json"
  path.write_text("old")
  fileio.write_json_atomic(path, [1])
  assert json.loads(path.read_text()) == [1]
  umask = os.umask(0)
  os.umask(umask)
  assert stat.S_IMODE(os.stat(path).st_mode) == 0o666 & ~umask  # not mkstemp's 0o600


def test_a_failed_write_keeps_the_old_file_and_removes_the_temp(tmp_path):
  path = tmp_path / "a.json"
  path.write_text("old")
  with pytest.raises(ValueError):
    fileio.write_json_atomic(path, {"x": float("nan")}, allow_nan=False)
  with pytest.raises(RuntimeError, match="boom"):
    with fileio.atomic_path(path) as tmp:
      with open(tmp, "w") as f:
        f.write("half")
      raise RuntimeError("boom")
  assert path.read_text() == "old"
  assert _names(tmp_path) == ["a.json"]


def test_keep_partial_leaves_the_unfinished_temp_for_a_resumable_writer(tmp_path):
  path = tmp_path / "shard.rec"
  with pytest.raises(KeyboardInterrupt):
    with fileio.atomic_path(path, keep_partial=True) as tmp:
      with open(tmp, "w") as f:
        f.write("half")
      raise KeyboardInterrupt
  (left,) = _names(tmp_path)
  assert left.startswith("shard.rec" + fileio.TEMP_MARKER)
  assert (tmp_path / left).read_text() == "half"


def test_each_writer_gets_its_own_temp_name(tmp_path):
  path = tmp_path / "a"
  with fileio.atomic_path(path) as t1, fileio.atomic_path(path) as t2:
    assert t1 != t2 and os.path.dirname(t1) == str(tmp_path)
    for t, text in ((t1, "1"), (t2, "2")):
      with open(t, "w") as f:
        f.write(text)
  assert path.read_text() == "1"  # the outer block finishes last and wins
  assert _names(tmp_path) == ["a"]


def test_docstring_example_runs():
  import doctest  # pylint: disable=g-import-not-at-top

  result = doctest.testmod(fileio, verbose=False)
  assert result.attempted > 0 and result.failed == 0


class _Broken(ValueError):
  pass


def test_read_json_names_the_file_line_and_column_or_the_bad_byte(tmp_path):
  good = tmp_path / "good.json"
  good.write_text('{"a": [1, 2.5], "b": "é"}', encoding="utf-8")
  assert fileio.read_json(good) == {"a": [1, 2.5], "b": "é"}
  bad = tmp_path / "bad.json"
  bad.write_text('{\n  "a": 1,\n  "b": \n}\n')
  with pytest.raises(ValueError) as err:
    fileio.read_json(bad)
  assert str(err.value) == f"{bad}:4: not valid JSON (Expecting value, column 1)"
  latin = tmp_path / "latin.json"
  latin.write_bytes(b'{"a": "caf\xe9"}')
  with pytest.raises(_Broken) as err:  # the caller's error type and hint
    fileio.read_json(latin, error=_Broken, hint="; delete it")
  assert str(err.value) == f"{latin}: not UTF-8 (byte offset 10); expected JSON; delete it"
  assert latin.read_bytes() == b'{"a": "caf\xe9"}'  # reading never changes the file


class _Other(ValueError):
  pass


def test_read_json_header_checks_the_format_field(tmp_path):
  head = tmp_path / "h.json"
  head.write_text('{"format": "jitr.x", "n": 1}')
  assert fileio.read_json_header(head, "jitr.x") == {"format": "jitr.x", "n": 1}
  with pytest.raises(_Other) as err:  # another format: the mismatch error
    fileio.read_json_header(head, "jitr.y", error=_Broken, mismatch_error=_Other)
  assert str(err.value) == f"{head}: field 'format' is 'jitr.x', expected 'jitr.y'"
  head.write_text("[1, 2]")
  with pytest.raises(_Broken) as err:  # not an object: the error when no mismatch error
    fileio.read_json_header(head, "jitr.x", error=_Broken)
  assert str(err.value) == f"{head}: field 'format' is 'list', expected 'jitr.x'"
  head.write_text("{")
  with pytest.raises(_Broken, match="not valid JSON"):  # not JSON: always the error
    fileio.read_json_header(head, "jitr.x", error=_Broken, mismatch_error=_Other)
