"""jitr-tables' faults, each one line (``jitr-tables: error: ...``, exit status 1) before
anything is written, or recovered: an imported workdir of another network or imported on
other test data, ``--set`` values jitr-train refuses (every action), a damaged reused
report (scored again), a table write that fills the disk (the three files replaced
together or not at all), a file where ``--runs`` or ``--out`` expects a folder.

Workdirs are hand-written files (``config.json``, ``import.json``, ``inputs.json``,
``metrics.json``): nothing is trained here; the end-to-end runs are
tests/apps/test_tables_command.py's."""

import errno
import functools
import hashlib
import json
import os
import pathlib
import shutil

import pytest

from jitr import fileio, paths
from jitr.apps import _cli
from jitr.experiment.pinned_inputs import fingerprint
from jitr.papers import (
  actions,
  imported,
  registry,
  row_scores,
  table_files,
  table_options,
  table_report,
)
from jitr.papers.comparison import compare
from jitr.papers.published import Row, Run
from jitr.papers.table_files import write_table_files
from tests.fake_bucket import fake_bucket
from tests.file_fixtures import snapshot

TABLE = "cvse.readme.f30k"
FIX = "; expected a workdir jitr-import made from an official cvse checkpoint"


def _one_line_exit(body) -> str:
  """The line ``body`` ends jitr-tables with (exit status 1: ``SystemExit`` with a
  message); one line, no traceback."""
  with pytest.raises(SystemExit) as ended:
    _cli.run_reporting_bad_input("jitr-tables", body)
  line = ended.value.code
  assert isinstance(line, str) and "\n" not in line, line  # a string exits with status 1
  return line


def _precomp(root: pathlib.Path, caption: str = "a dog runs") -> pathlib.Path:
  """``root/f30k_precomp`` with a test split of a few bytes (nothing here loads it)."""
  folder = root / "f30k_precomp"
  folder.mkdir(parents=True)
  (folder / "test_ims.npy").write_bytes(b"\x93NUMPY test features")
  (folder / "test_caps.txt").write_text(f"{caption}\n")
  return folder


def _imported(
  workdir: pathlib.Path, precomp_root: pathlib.Path, *, network="cvse", pins=True, **fields
) -> str:
  """A workdir as jitr-import leaves it, by hand: ``config.json`` (``network``, the test
  split of ``precomp_root``, ``fields``), ``import.json`` and, with ``pins``,
  ``inputs.json`` pinning its test files."""
  workdir.mkdir(parents=True)
  config = {
    "model": {"name": network},
    "dataset": "f30k_precomp",
    "test_split": "test",
    "precomp_root": str(precomp_root),
    "vocab_file": "",
    "text": {"pretrained": ""},
    "concepts": {"source": "", "wordnet": "", "labels": "jitr"},
    **fields,
  }
  (workdir / "config.json").write_text(json.dumps(config))
  (workdir / "import.json").write_text(json.dumps({"network": network}))
  if pins:
    folder = precomp_root / config["dataset"]
    inputs = {
      f"{config['dataset']}/test_{name}": fingerprint(str(folder / f"test_{name}")).as_json()
      for name in ("ims.npy", "caps.txt")
    }
    (workdir / "inputs.json").write_text(json.dumps({"inputs": inputs}))
  return str(workdir)


def _options(root: pathlib.Path, **fields) -> table_options.Options:
  return table_options.Options(
    table=TABLE,
    runs=str(root / "runs"),
    seeds=1,
    precomp_root=str(root / "data"),
    estimate=False,
    **fields,
  )


# ---------------------------------------------------------------- --imported: the row's own
def test_an_imported_workdir_of_another_network_or_split_is_one_line(tmp_path, capsys):
  _precomp(tmp_path / "data")
  sgr = _imported(tmp_path / "official_sgr", tmp_path / "data", network="sgr")
  coco = _imported(
    tmp_path / "official_coco",
    tmp_path / "data",
    pins=False,
    dataset="coco_precomp",
    test_split="testall",
  )
  before = snapshot(tmp_path)
  for action in ("report", "plan", "jobs"):
    line = _one_line_exit(
      functools.partial(actions.reproduce, action, _options(tmp_path, imported=(f"1={sgr}",)))
    )
    assert line == (
      f"jitr-tables: error: --imported=1={sgr}: {sgr} holds a sgr network, row 1 (CVSE) is "
      f"cvse{FIX}"
    )
  line = _one_line_exit(
    lambda: actions.reproduce("report", _options(tmp_path, imported=(f"1={coco}",)))
  )
  assert line == (
    f"jitr-tables: error: --imported=1={coco}: {coco} is tested on coco_precomp split "
    "testall, row 1's runs on f30k_precomp split test; expected a workdir imported with the "
    "row's dataset and test_split"
  )
  assert capsys.readouterr().out == ""
  assert snapshot(tmp_path) == before and not (tmp_path / "runs").exists()
  # a row jitr does not run has no network to be: VSE∞'s README quotes VSE++ with BERT
  quoted = registry.table_named("vseinf.readme.f30k").rows[0]
  with pytest.raises(ValueError) as err:
    imported.check_imported(f"1={sgr}", sgr, 1, quoted, [])
  assert str(err.value) == (
    f"--imported=1={sgr}: row 1 (VSE++ (BUTD region, BERT-base)) has no jitr run to compare "
    "it with (VSE++ with BUTD regions and a BERT-base text tower: not a jitr network); "
    "expected a row jitr runs"
  )
  # an ensemble row (SGRAF: the mean of SGR's and SAF's matrices) is no single import
  runs = tuple(Run(f"f30k_{n}_triplet", f"f30k,{n},triplet") for n in ("sgr", "saf"))
  sgraf = Row("SGRAF", {}, runs)
  with pytest.raises(ValueError, match=r"holds a sgr network, row 2 \(SGRAF\) is sgr \+ saf;"):
    imported.check_imported(
      f"2={sgr}", sgr, 2, sgraf, [{"model": {"name": n}} for n in ("sgr", "saf")]
    )


def test_an_imported_workdir_on_other_test_data_is_one_line_and_the_same_bytes_pass(
  tmp_path, capsys
):
  table_data = _precomp(tmp_path / "data")
  other = _precomp(tmp_path / "other", caption="a cat sleeps")  # other captions, same features
  pinned = _imported(tmp_path / "pinned", tmp_path / "other")
  unpinned = _imported(tmp_path / "unpinned", tmp_path / "other", pins=False)
  before = snapshot(tmp_path)
  ours = hashlib.sha256((table_data / "test_caps.txt").read_bytes()).hexdigest()
  theirs = hashlib.sha256((other / "test_caps.txt").read_bytes()).hexdigest()
  for workdir in (pinned, unpinned):
    options = _options(tmp_path, imported=(f"1={workdir}",))
    line = _one_line_exit(functools.partial(actions.reproduce, "report", options))
    assert line == (
      f"jitr-tables: error: --imported=1={workdir}: {workdir} was imported on other test "
      f"data than the table's: its f30k_precomp/test_caps.txt is {other}/test_caps.txt "
      f"(SHA-256 {theirs[:16]}…), the table's runs read {table_data}/test_caps.txt (SHA-256 "
      f"{ours[:16]}…); import it with --config.precomp_root={tmp_path / 'data'}"
    )
  assert capsys.readouterr().out == ""
  assert snapshot(tmp_path) == before and not (tmp_path / "runs").exists()
  # the table's own files, or the same bytes in another folder (a copy): taken
  shutil.copytree(table_data, tmp_path / "copy" / "f30k_precomp")
  same = _imported(tmp_path / "same", tmp_path / "data")
  copied = _imported(tmp_path / "copied", tmp_path / "copy")
  items = (f"1={same}", f"1={copied}")
  actions.reproduce("plan", _options(tmp_path, imported=items))
  assert "0 finished, 0 started, 1 missing" in capsys.readouterr().out


# ---------------------------------------------------------------- --set as jitr-train checks it
SETS = {
  "batch_size=abc": "flag --config.batch_size=abc: invalid literal for int() with base 10: 'abc'",
  "num_epochs=-1": "config.num_epochs: expected a whole number >= 0, got -1",
  "model.embed_dim=-1": "config.model.embed_dim: expected a whole number >= 1, got -1 (a size "
  "or count of the 'cvse' network)",
}


@pytest.mark.parametrize("item", sorted(SETS))
def test_every_action_refuses_a_set_value_jitr_train_refuses(tmp_path, capsys, item):
  _precomp(tmp_path / "data")
  before = snapshot(tmp_path)
  for action in table_options.ACTIONS:
    options = _options(tmp_path, sets=(item,))
    line = _one_line_exit(functools.partial(actions.reproduce, action, options))
    assert line == f"jitr-tables: error: f30k_cvse_triplet (f30k,cvse,triplet): {SETS[item]}"
  assert capsys.readouterr().out == ""
  assert snapshot(tmp_path) == before and not (tmp_path / "runs").exists()


# ---------------------------------------------------------------- a damaged reused report
REPORT = {
  "full/i2t/R@1": 50.0,
  "full/i2t/R@5": 100.0,
  "full/i2t/R@10": 100.0,
  "full/t2i/R@1": 35.0,
  "full/t2i/R@5": 100.0,
  "full/t2i/R@10": 100.0,
  "full/rsum": 485.0,
}
GOOD = json.dumps(REPORT).encode()
EXPECTED = "expected the JSON object of metrics jitr-eval writes"
DAMAGED = {  # the report's bytes -> what the line says of them
  "flipped": (GOOD[:12] + b"\x96" + GOOD[13:], ": not UTF-8 (byte offset 12); expected JSON"),
  "cut": (
    GOOD[:30],
    ":1: not valid JSON (Unterminated string starting at, column 24)",
  ),
  "a list": (json.dumps([REPORT]).encode(), ": a JSON array; " + EXPECTED),
  "a missing metric": (
    json.dumps({k: v for k, v in REPORT.items() if k != "full/t2i/R@5"}).encode(),
    ": no 'full/t2i/R@5'; " + EXPECTED,
  ),
  "a string": (
    json.dumps({**REPORT, "full/rsum": "485"}).encode(),
    ": 'full/rsum' is '485', not a number; " + EXPECTED,
  ),
}


def _finished_run(root: pathlib.Path, report: bytes) -> tuple[pathlib.Path, pathlib.Path]:
  """A finished seed 0 of the table's run (its ``metrics.json``) with the report of an
  earlier scoring, ``report`` (newer than the run: reused)."""
  workdir = root / "runs" / "f30k_cvse_triplet" / "seed0"
  workdir.mkdir(parents=True)
  (workdir / "metrics.json").write_text("{}")
  os.utime(workdir / "metrics.json", (100, 100))
  path = workdir / "eval_test_official" / "metrics.json"
  path.parent.mkdir()
  path.write_bytes(report)
  os.utime(path, (200, 200))
  return workdir, path


def _scored_again(monkeypatch, writes: bytes = GOOD) -> list:
  """Stands in for jitr-eval: writes ``writes`` as the report; returns its calls."""
  calls = []

  def evaluate(workdir, **kwargs):
    calls.append((workdir, kwargs))
    report = pathlib.Path(workdir) / "eval_test_official" / "metrics.json"
    report.parent.mkdir(exist_ok=True)
    report.write_bytes(writes)

  monkeypatch.setattr(row_scores, "evaluate_workdir", evaluate)
  return calls


@pytest.mark.parametrize("damage", sorted(DAMAGED))
def test_a_damaged_reused_report_is_scored_again_and_said_in_one_line(
  tmp_path, monkeypatch, capsys, damage
):
  data, says = DAMAGED[damage]
  workdir, path = _finished_run(tmp_path, data)
  calls = _scored_again(monkeypatch)
  table = table_options.selected_table(_options(tmp_path))
  assert table_report.row_scores(table, _options(tmp_path)) == [[REPORT]]
  assert capsys.readouterr() == (
    "",
    f"jitr-tables: {path}{says}; a damaged report: scoring the row again\n",
  )
  assert calls == [
    (str(workdir), dict(split="test", ensemble=[], protocol="official", num_queries=0))
  ]
  assert path.read_bytes() == GOOD
  assert table_report.row_scores(table, _options(tmp_path)) == [[REPORT]]  # reused now
  assert len(calls) == 1 and capsys.readouterr().err == ""


def test_a_report_jitr_eval_wrote_that_cannot_be_read_is_one_line_naming_it(tmp_path, monkeypatch):
  _, path = _finished_run(tmp_path, b"")
  _scored_again(monkeypatch, writes=b"[]")
  table = registry.table_named(TABLE)
  with pytest.raises(ValueError) as err:
    row_scores.score_row(table, [str(path.parents[1])], say=lambda line: None)
  assert str(err.value) == f"{path}: a JSON array; {EXPECTED}"


# ---------------------------------------------------------------- the table files together
def _comparison(value: float) -> dict:
  table = registry.table_named(TABLE)
  return compare(table, [[{**REPORT, "full/i2t/R@1": value}]])


@pytest.fixture
def cheap_png(monkeypatch):
  """The table's PNG as a few bytes of its comparison (what is written is not what these
  tests check; tests/papers/test_comparison.py renders the real one)."""
  monkeypatch.setattr(
    table_files, "png_bytes", lambda comparison: b"\x89PNG" + json.dumps(comparison).encode()
  )


def _full_disk_at(target: str):
  """``fileio``'s fsync, failing with ENOSPC for the temporary file of ``target``."""
  real = fileio._fsync_file

  def fsync(path):
    if os.path.basename(path).startswith(os.path.basename(target) + fileio.TEMP_MARKER):
      raise OSError(errno.ENOSPC, "No space left on device")
    real(path)

  return fsync


@pytest.mark.parametrize("kind", ["md", "json", "png"])
def test_a_full_disk_leaves_the_previous_three_table_files(tmp_path, monkeypatch, cheap_png, kind):
  out = tmp_path / "tables"
  files = write_table_files(_comparison(40.0), str(out))
  before = snapshot(out)
  fsync = fileio._fsync_file
  monkeypatch.setattr(fileio, "_fsync_file", _full_disk_at(files[kind]))
  line = _one_line_exit(lambda: write_table_files(_comparison(60.0), str(out)))
  assert line == (
    f"jitr-tables: error: [Errno 28] disk full: could not write {files[kind]} (temporary "
    "file removed); free space and run the same command again"
  )
  assert snapshot(out) == before
  assert sorted(os.listdir(out)) == [f"{TABLE}.json", f"{TABLE}.md", f"{TABLE}.png"]
  monkeypatch.setattr(fileio, "_fsync_file", fsync)
  write_table_files(_comparison(60.0), str(out))  # the disk freed: the new three
  assert json.loads((out / f"{TABLE}.json").read_text())["rows"][0]["metrics"]["i2t/R@1"][
    "seeds"
  ] == [60.0]
  assert snapshot(out) != before and len(os.listdir(out)) == 3


def test_a_rename_that_fails_puts_the_previous_files_back(tmp_path, monkeypatch, cheap_png):
  out = tmp_path / "tables"
  files = write_table_files(_comparison(40.0), str(out))
  before = snapshot(out)
  real = paths.replace

  def replace(src, dst):
    if dst == files["png"]:  # the last of the three, after the .md and .json were renamed
      raise OSError(errno.EIO, "Input/output error", dst)
    real(src, dst)

  monkeypatch.setattr(paths, "replace", replace)
  with pytest.raises(OSError, match="Input/output error"):
    write_table_files(_comparison(60.0), str(out))
  assert snapshot(out) == before and len(os.listdir(out)) == 3
  shutil.rmtree(out)  # none there before: none after
  with pytest.raises(OSError, match="Input/output error"):
    write_table_files(_comparison(60.0), str(out))
  assert os.listdir(out) == []


@pytest.mark.parametrize("kind", ["md", "json", "png"])
def test_in_a_bucket_a_full_disk_leaves_the_previous_three_objects(
  tmp_path, monkeypatch, cheap_png, kind
):
  monkeypatch.chdir(tmp_path)  # a URL handed to os would become a folder here
  with fake_bucket(tmp_path / "bucket") as bucket:
    files = write_table_files(_comparison(40.0), f"{bucket}/tables")
    before = snapshot(tmp_path / "bucket")
    real = paths.open

    def full(path, mode="r", **kwargs):
      if "w" in mode and path.startswith(files[kind] + fileio.TEMP_MARKER):
        raise OSError(errno.ENOSPC, "No space left on device")
      return real(path, mode, **kwargs)

    monkeypatch.setattr(paths, "open", full)
    with pytest.raises(OSError) as err:
      write_table_files(_comparison(60.0), f"{bucket}/tables")
    assert str(err.value).startswith(f"[Errno 28] disk full: could not write {files[kind]} ")
    assert snapshot(tmp_path / "bucket") == before
    monkeypatch.setattr(paths, "open", real)
    write_table_files(_comparison(60.0), f"{bucket}/tables")
  assert sorted(os.listdir(tmp_path / "bucket" / "tables")) == sorted(
    os.path.basename(f) for f in files.values()
  )
  assert snapshot(tmp_path / "bucket") != before
  assert sorted(os.listdir(tmp_path)) == ["bucket"]


# ---------------------------------------------------------------- a file where a folder goes
def test_a_file_where_runs_or_out_expects_a_folder_is_one_line(tmp_path, capsys):
  _precomp(tmp_path / "data")
  (tmp_path / "notes.txt").write_text("not a folder")
  (tmp_path / "runs").mkdir()
  (tmp_path / "runs" / "tables").write_text("not a folder either")
  notes, runs = tmp_path / "notes.txt", tmp_path / "runs"
  cases = {
    ("--runs", str(notes)): f"--runs={notes}: {notes} is a file; expected a folder (of the "
    "runs' workdirs)",
    ("--out", str(notes)): f"--out={notes}: {notes} is a file; expected a folder (of the "
    "table files)",
    ("--out", f"{notes}/tables"): f"--out={notes}/tables: {notes}/tables lies under the file "
    f"{notes}; expected a folder (of the table files)",
    ("--runs", str(runs)): f"--runs={runs}: {runs}/tables is a file; expected a folder (of "
    "the table files)",
  }
  before = snapshot(tmp_path)
  for (flag, value), want in cases.items():
    for action in ("plan", "jobs", "report"):
      options = _options(tmp_path)
      if flag == "--runs":
        options = table_options.Options(**{**options.__dict__, "runs": value})
      else:
        options = table_options.Options(**{**options.__dict__, "out": value})
      line = _one_line_exit(functools.partial(actions.reproduce, action, options))
      assert line == f"jitr-tables: error: {want}", (flag, value, action)
  assert capsys.readouterr().out == ""
  assert snapshot(tmp_path) == before
  assert sorted(os.listdir(tmp_path)) == ["data", "notes.txt", "runs"]
