"""jitr-tables end to end on a generated precomp folder of the real shapes (36 × 2048
regions, 5 captions an image; tiny sizes): two rows of VSE∞'s README table through the
printed job list (one seed), CVSE's README table (two seeds) through ``--action=run`` stopped by
SIGTERM and run again, then a third invocation that trains nothing and writes the same
bytes; each table's values against jitr-eval of every workdir, recomputed here."""

import json
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import time

import pytest

from jitr.papers import actions, table_options
from jitr.papers.published import DERIVED
from tests.bert_folder import write_bert_folder
from tests.file_fixtures import WORDS, write_precomp
from tests.labelled_folders import WIKI, write_labelled

REPO = pathlib.Path(__file__).resolve().parents[2]
# tiny runs of the papers' settings: two epochs (VSE∞'s warm-up, then its loss) of 13 steps
TINY = [
  "--set=num_epochs=2",
  "--set=batch_size=16",
  "--set=eval_batch_size=16",
  "--set=model.embed_dim=16",
  "--set=vocab_min_count=1",
]
CVSE_TINY = ["--set=model.word_dim=8", "--set=concepts.num_concepts=4"]


def _env() -> dict[str, str]:
  env = {**os.environ, "PYTHONPATH": str(REPO), "TF_CPP_MIN_LOG_LEVEL": "3"}
  # the console scripts on PATH, as an installed jitr's
  env["PATH"] = os.pathsep.join([os.path.dirname(sys.executable), env.get("PATH", "")])
  env["XLA_FLAGS"] = " ".join(  # one CPU device, as a user's machine
    f for f in env.get("XLA_FLAGS", "").split() if "host_platform_device_count" not in f
  )
  return env


def _exe(name: str) -> str:
  return shutil.which(name, path=os.path.dirname(sys.executable)) or name


def tables(*args: str, cwd: pathlib.Path) -> subprocess.CompletedProcess:
  return subprocess.run(
    [_exe("jitr-tables"), *args], cwd=cwd, env=_env(), capture_output=True, text=True, timeout=600
  )


def folder_files(root: pathlib.Path) -> dict[str, float]:
  """``{path: mtime_ns}`` of every file under ``root`` but the table files."""
  return {
    str(p): p.stat().st_mtime_ns
    for p in sorted(root.rglob("*"))
    if p.is_file() and "tables" not in p.parts
  }


@pytest.fixture
def folders(tmp_path):
  write_precomp(tmp_path / "data", n_images=40)
  write_bert_folder(tmp_path / "bert", WORDS)
  return tmp_path


def assert_values_are_jitr_eval(root: pathlib.Path, name: str, run: str, seeds: int) -> None:
  """The table's values of ``run``'s row = jitr-eval (official protocol) of each seed's
  workdir, recomputed here."""
  from jitr.experiment import evaluate_workdir

  table = json.loads((root / "runs" / "tables" / f"{name}.json").read_text())
  (row,) = [r for r in table["rows"] if r["runs"] == [run]]
  assert row["scored_seeds"] == seeds
  for seed in range(seeds):
    workdir = root / "runs" / run / f"seed{seed}"
    metrics = evaluate_workdir(str(workdir), protocol="official", num_queries=0)
    for metric, cell in row["metrics"].items():
      if metric in DERIVED:  # mR = rsum / 6, LSEH's mean and (± std) of one direction
        d = DERIVED[metric]
        want = d.formula(*(metrics[f"full/{s}"] for s in d.sources))
      else:
        want = metrics[f"full/{metric}"]
      assert cell["seeds"][seed] == round(want, 4), (name, seed, metric)


@pytest.mark.slow
def test_the_job_list_runs_as_printed_and_writes_the_table(folders):
  root = folders
  common = [
    "--table=vseinf.readme.f30k",
    "--rows=1,2",  # a row the README quotes (not a jitr network), a row jitr trains
    "--precomp_root=data",
    "--runs=runs",
    *TINY,
    "--set=text.pretrained=bert",
  ]
  done = tables(*common, "--seeds=2", "--action=jobs", cwd=root)
  assert done.returncode == 0, done.stderr[-3000:]
  lines = done.stdout.splitlines()
  # stop at the first failure, the row's run for two seeds, then the report
  assert len(lines) == 4, done.stdout
  assert lines.pop(0) == "set -e"
  assert lines[0].startswith("jitr-train --config=configs/paper.py:f30k,vseinf,triplet ")
  assert f"--workdir={root / 'runs' / 'f30k_vseinf_triplet' / 'seed0'}" in lines[0]
  assert "--config.seed=1" in lines[1]
  assert lines[1].replace("seed1", "seed0").replace("seed=1", "seed=0") == lines[0]
  assert lines[2].startswith("jitr-tables --table=vseinf.readme.f30k ")
  assert " --seeds=2 " in lines[2]
  assert lines[2].endswith("--action=report")
  # the list of one seed runs as printed (two seeds' tables: the CVSE test below)
  done = tables(*common, "--seeds=1", "--action=jobs", cwd=root)
  assert done.returncode == 0, done.stderr[-3000:]
  script = root / "jobs.sh"
  script.write_text(done.stdout)
  ran = subprocess.run(
    ["bash", str(script)], cwd=root, env=_env(), capture_output=True, text=True, timeout=600
  )
  assert ran.returncode == 0, ran.stderr[-3000:]
  table = json.loads((root / "runs" / "tables" / "vseinf.readme.f30k.json").read_text())
  assert [row["scored_seeds"] for row in table["rows"]] == [0, 1]
  page = (root / "runs" / "tables" / "vseinf.readme.f30k.md").read_text()
  assert page.startswith("# vseinf.readme.f30k: VSE∞ (official README), Results on Flickr30K")
  assert ran.stdout.endswith(page)  # after the run's own results, the report's table
  assert_values_are_jitr_eval(root, "vseinf.readme.f30k", "f30k_vseinf_triplet", 1)


@pytest.mark.slow
def test_an_lseh_table_runs_its_rows_and_reports_the_mean_and_std_columns(folders):
  """Table 4 of LSEH: VSE++ with LMH1 and with LSEH (Table 2's settings over the tiny
  ones), trained, then reported with the printed numbers, jitr's and the difference."""
  root = folders
  common = [
    "--table=lseh.table4.f30k",
    "--rows=1,3",
    "--seeds=1",
    "--precomp_root=data",
    "--runs=runs",
    *TINY,
    "--set=estimators.lsa.k=4",  # LSEH's TF-IDF + SVD of the generated captions (8 words)
    "--set=optimizer.decay_epochs=(1,)",
  ]
  done = tables(*common, "--action=run", "--noestimate", cwd=root)
  assert done.returncode == 0, done.stderr[-3000:]
  for run in ("lseh_f30k_vsepp_lmh1", "lseh_f30k_vsepp_lseh"):
    config = json.loads((root / "runs" / run / "seed0" / "config.json").read_text())
    assert config["optimizer"]["learning_rate"] == (2e-4 if run.endswith("lmh1") else 2e-3)
    assert_values_are_jitr_eval(root, "lseh.table4.f30k", run, 1)
  page = (root / "runs" / "tables" / "lseh.table4.f30k.md").read_text()
  assert page.startswith("# lseh.table4.f30k: LSEH (Gong and Cosma), Table 4")
  assert "| VSE++ LSEH | paper | 45.90 | 74.00 | 82.70 | 67.50 | 15.70 |" in page
  report = tables(*common, "--action=report", cwd=root)
  assert report.returncode == 0, report.stderr[-3000:]
  assert report.stdout == page


@pytest.mark.slow
def test_a_listwise_ablation_table_runs_its_three_rows(folders):
  """Listwise ITR's Table V: VSE++† with the triplet, Smooth-NDCG alone (the triplet at
  weight 0) and both on RSC relevance (all-MiniLM-L6-v2 of the generated captions),
  trained and reported with the printed numbers, jitr's and the difference."""
  root = folders
  common = [
    "--table=listwise.table5.f30k",
    "--seeds=1",
    "--precomp_root=data",
    "--runs=runs",
    *TINY,
  ]
  done = tables(*common, "--action=run", "--noestimate", cwd=root)
  assert done.returncode == 0, done.stderr[-3000:]
  weights = {}
  for run in ("f30k_vsepp_triplet", "f30k_vsepp_sndcg_alone", "f30k_vsepp_sndcg"):
    config = json.loads((root / "runs" / run / "seed0" / "config.json").read_text())
    weights[run] = {name: term["weight"] for name, term in config["loss"].items()}
    assert_values_are_jitr_eval(root, "listwise.table5.f30k", run, 1)
  assert weights == {
    "f30k_vsepp_triplet": {"triplet": 1.0},
    "f30k_vsepp_sndcg_alone": {"smooth_ndcg": 1.0, "triplet": 0.0},
    "f30k_vsepp_sndcg": {"smooth_ndcg": 1.0, "triplet": 1.0},
  }
  page = (root / "runs" / "tables" / "listwise.table5.f30k.md").read_text()
  assert page.startswith("# listwise.table5.f30k: Listwise ITR (Li et al.), TABLE V")
  assert "| S-NDCG | paper | 59.10 | 84.00 | 89.90 | 39.50 | 69.80 | 79.70 | 422.00 |" in page


@pytest.mark.slow
def test_cmal2rs_table_runs_on_labelled_vectors_and_reports_map_in_the_printed_unit(tmp_path):
  """Table 1 of CMAL²R on Wikipedia's shapes: both of its rows jitr trains (α = 0.4 and 1),
  then the report: jitr's class MAP in [0, 1] beside the printed numbers."""
  from jitr.experiment import evaluate_workdir

  write_labelled(tmp_path / "wiki", WIKI, {"train": 120, "test": 40})
  common = [
    "--table=cmal2r.table1.wiki",
    "--rows=9,10",
    "--seeds=1",
    "--runs=runs",
    "--set=labelled.folder=wiki",
    "--set=labelled.val_pairs=20",
    "--set=num_epochs=2",
    "--set=batch_size=20",
  ]
  done = tables(*common, "--action=run", "--noestimate", cwd=tmp_path)
  assert done.returncode == 0, done.stderr[-3000:]
  table = json.loads((tmp_path / "runs" / "tables" / "cmal2r.table1.wiki.json").read_text())
  rows = {row["label"]: row for row in table["rows"]}
  assert [rows[r]["scored_seeds"] for r in ("CMAL²R", "CMAL²R(bi.)")] == [1, 1]
  for label, run in (
    ("CMAL²R", "wiki_twobranch_cmal2r_i2t"),
    ("CMAL²R(bi.)", "wiki_twobranch_cmal2r"),
  ):
    config = json.loads((tmp_path / "runs" / run / "seed0" / "config.json").read_text())
    assert config["loss"]["adaptive_listwise"]["alpha"] == (1.0 if run.endswith("i2t") else 0.4)
    metrics = evaluate_workdir(
      str(tmp_path / "runs" / run / "seed0"), protocol="jitr", num_queries=0
    )
    for metric, cell in rows[label]["metrics"].items():
      assert cell["seeds"] == [round(metrics[f"class/{metric}"] / 100, 4)], (label, metric)
      assert 0 < cell["seeds"][0] <= 1
  report = tables(*common, "--action=report", cwd=tmp_path)
  assert report.returncode == 0, report.stderr[-3000:]
  assert "| CMAL²R(bi.) | paper | 0.4316 | 0.3416 | 0.3866 |" in report.stdout


@pytest.mark.slow
def test_sams_reduced_data_table_trains_on_its_fraction_and_reports_spice_ncs(tmp_path):
  """Table 2 of SAM on 10 % of the training images: CVSE with its official settings and
  with SAM (4 of 40 images, one step an epoch), scored against stand-in SPICE records of
  the test split (word F1, written by jitr-precompute where the report reads them); the
  table's NCS@K and Nsum are jitr-eval's with the annotated positives kept."""
  from jitr.experiment import ExtraMetrics, SemanticSource, evaluate_workdir
  from jitr.experiment.workdir import saved_steps
  from tests.experiment.test_semantic_eval import word_f1

  root = tmp_path
  write_precomp(root / "data", n_images=40, n_eval=12)  # NCS@10 of 12 images fits
  test_caps = root / "data" / "f30k_precomp" / "test_caps.txt"
  caps = test_caps.read_text().splitlines()
  spice = {
    str(i): {str(j): word_f1(c, caps[5 * i : 5 * i + 5]) for j, c in enumerate(caps)}
    for i in range(12)
  }
  (root / "spice.json").write_text(json.dumps(spice))
  out = root / "runs" / "data" / "relevance" / "f30k_precomp-test" / "spice"
  done = subprocess.run(
    [
      _exe("jitr-precompute"),
      f"--captions={test_caps}",
      "--scores=spice=spice.json",
      f"--out={out}",
    ],
    cwd=root,
    env=_env(),
    capture_output=True,
    text=True,
    timeout=600,
  )
  assert done.returncode == 0, done.stderr[-3000:]
  common = [
    "--table=sam.table2.f30k_10",
    "--rows=1,2",
    "--seeds=1",
    "--precomp_root=data",
    "--runs=runs",
    *TINY,
    *CVSE_TINY,
    "--set=batch_size=4",
  ]
  done = tables(*common, "--action=run", "--noestimate", cwd=root)
  assert done.returncode == 0, done.stderr[-3000:]
  table = json.loads((root / "runs" / "tables" / "sam.table2.f30k_10.json").read_text())
  for run in ("f30k_cvse_triplet_train0.1", "f30k_cvse_sam_train0.1"):
    workdir = root / "runs" / run / "seed0"
    config = json.loads((workdir / "config.json").read_text())
    assert config["train_fraction"] == 0.1
    assert saved_steps(str(workdir))[-1] == 10  # 20 captions, 4 a step, 2 epochs
    metrics = evaluate_workdir(
      str(workdir), protocol="jitr", num_queries=0, extra=ExtraMetrics(SemanticSource("topk:spice"))
    )
    (row,) = [r for r in table["rows"] if r["runs"] == [run]]
    cells = row["metrics"]
    assert cells["semantic_gt/t2i/NCS@5"]["seeds"] == [round(metrics["semantic_gt/t2i/NCS@5"], 4)]
    nsum = sum(metrics[f"semantic_gt/{d}/NCS@{k}"] for d in ("i2t", "t2i") for k in (1, 5, 10))
    assert cells["nsum"]["seeds"] == [round(nsum, 4)]
    assert cells["rsum"]["seeds"] == [round(metrics["full/rsum"], 4)]
  page = (root / "runs" / "tables" / "sam.table2.f30k_10.md").read_text()
  assert "| CVSE + SAM | paper | 34.60 | 60.40 |" in page


@pytest.mark.slow
def test_a_stopped_run_goes_on_and_a_second_invocation_trains_nothing(folders, capsys):
  root = folders
  common = [
    "--table=cvse.readme.f30k",
    "--seeds=2",
    "--precomp_root=data",
    "--runs=runs",
    *TINY,
    *CVSE_TINY,
  ]
  proc = subprocess.Popen(
    [_exe("jitr-tables"), *common, "--action=run", "--noestimate", "--set=num_epochs=3"],
    cwd=root,
    env=_env(),
    stdout=subprocess.PIPE,
    stderr=subprocess.PIPE,
    text=True,
  )
  latest = root / "runs" / "f30k_cvse_triplet" / "seed0" / "checkpoints" / "latest"
  deadline = time.monotonic() + 300
  while not (latest.is_dir() and any(p.name.isdigit() for p in latest.iterdir())):
    assert proc.poll() is None, proc.communicate()[1][-3000:]
    assert time.monotonic() < deadline, "no checkpoint in time"
    time.sleep(0.1)
  proc.send_signal(signal.SIGTERM)
  _, err = proc.communicate(timeout=300)
  assert proc.returncode == 75, err[-3000:]
  last = err.strip().splitlines()[-1]
  assert last.startswith("jitr-tables: f30k_cvse_triplet seed 0 stopped by SIGTERM at step ")
  assert last.endswith("the latest checkpoint is saved: run the same command to resume")
  again = tables(*common, "--action=run", "--noestimate", "--set=num_epochs=3", cwd=root)
  assert again.returncode == 0, again.stderr[-3000:]
  assert "jitr-tables: run 1/2: f30k_cvse_triplet seed 0" in again.stderr
  assert "resumed from step" in again.stderr
  out = root / "runs" / "tables"
  written = {p.name: p.read_bytes() for p in out.glob("cvse.readme.f30k.*")}
  assert sorted(written) == ["cvse.readme.f30k.json", "cvse.readme.f30k.md", "cvse.readme.f30k.png"]
  # the same command again (here in this process): nothing trained or scored again, the
  # same table bytes
  before = folder_files(root / "runs")
  options = table_options.Options(
    table="cvse.readme.f30k",
    runs=str(root / "runs"),
    seeds=2,
    precomp_root=str(root / "data"),
    sets=tuple(a.split("=", 1)[1] for a in [*TINY, *CVSE_TINY, "--set=num_epochs=3"]),
    estimate=False,
  )
  actions.reproduce("run", options)
  third = capsys.readouterr()
  assert "run 1/" not in third.err
  assert folder_files(root / "runs") == before
  assert {p.name: p.read_bytes() for p in out.glob("cvse.readme.f30k.*")} == written
  assert third.out == written["cvse.readme.f30k.md"].decode()
  # docs/reproduce.md's example is this table (the same folder, settings and seeds)
  page = (REPO / "docs" / "reproduce.md").read_text(encoding="utf-8")
  example = page.split("```text\n# cvse.readme.f30k: ", 1)[1].split("```", 1)[0]
  assert third.out == "# cvse.readme.f30k: " + example
  # each seed's values: the official protocol's R@K of the run's best checkpoint, which
  # jitr-train scored on the same test split when it finished (no ties among random scores)
  table = json.loads((out / "cvse.readme.f30k.json").read_text())
  for seed in range(2):
    trained = json.loads(
      (root / "runs" / "f30k_cvse_triplet" / f"seed{seed}" / "metrics.json").read_text()
    )
    for metric, cell in table["rows"][0]["metrics"].items():
      want = trained["full/rsum"] / 6 if metric == "mR" else trained[f"full/{metric}"]
      assert cell["seeds"][seed] == round(want, 4), (seed, metric)


def test_a_bad_option_is_one_line_before_anything_runs(folders, tmp_path, capsys):
  with pytest.raises(ValueError, match=r"^--set=model\.sim_dmi=8: no run of the table has"):
    actions.reproduce(
      "run",
      table_options.Options(
        table="cvse.readme.f30k", runs=str(tmp_path / "r"), sets=("model.sim_dmi=8",)
      ),
    )
  with pytest.raises(ValueError, match=r"^--rows: 3: cvse.readme.f30k has rows 1 to 1$"):
    actions.reproduce("plan", table_options.Options(table="cvse.readme.f30k", rows=("3",)))
  with pytest.raises(ValueError, match=r"^--imported=1=nope: nope holds no import.json"):
    actions.reproduce(
      "report", table_options.Options(table="cvse.readme.f30k", imported=("1=nope",))
    )
  assert not (tmp_path / "r").exists()


def test_a_run_trained_with_other_settings_is_refused_before_anything_runs(folders, capsys):
  """A finished run is not trained again, so a command whose --set values differ from the
  ones it was trained with must not report it as its own: one line naming the run."""
  from jitr.experiment.run_config import resolved_config
  from jitr.experiment.workdir import record_config
  from jitr.papers.plan import seeded_runs
  from jitr.papers.run_configs import run_config

  root = folders
  sets = [a.split("=", 1)[1] for a in [*TINY, *CVSE_TINY]]

  def options(*extra: str) -> table_options.Options:
    return table_options.Options(
      table="cvse.readme.f30k",
      runs=str(root / "runs"),
      seeds=1,
      precomp_root=str(root / "data"),
      sets=(*sets, *extra),
      estimate=False,
    )

  (seeded,) = seeded_runs(table_options.selected_table(options()), str(root / "runs"), 1)
  run_sets = table_options.run_sets(options())
  pathlib.Path(seeded.workdir).mkdir(parents=True)
  record_config(resolved_config(run_config(seeded, run_sets)), seeded.workdir)
  (pathlib.Path(seeded.workdir) / "metrics.json").write_text("{}")
  before = folder_files(root)
  actions.reproduce("plan", options())  # the settings it was trained with
  assert "1 finished, 0 started, 0 missing" in capsys.readouterr().out
  w = seeded.workdir
  fix = f"give the --set values it was trained with, another --runs folder, or delete {w}"
  refusals = {
    ("run", "model.embed_dim=32"): f"workdir {w} was trained with model.embed_dim=16 "
    f"(this config: 32); {fix}",
    ("report", "num_epochs=5"): f"{w} finished 2 epochs, this command asks for num_epochs=5; {fix}",
  }
  for (action, extra), want in refusals.items():
    with pytest.raises(ValueError) as err:
      actions.reproduce(action, options(extra))
    assert str(err.value) == f"f30k_cvse_triplet seed 0: {want}"
  assert folder_files(root) == before


@pytest.mark.parametrize("action", ["plan", "run", "report"])
def test_a_table_of_printed_reference_lines_reports_them(tmp_path, capsys, action):
  """SAM's Table 1 (Criss-Crossed's judgements are not jitr data): nothing to train, its
  printed numbers beside empty jitr lines, whatever the --set (no run takes it)."""
  options = table_options.Options(
    table="sam.table1.crisscrossed", runs=str(tmp_path / "runs"), seeds=1, sets=("seed=3",)
  )
  actions.reproduce(action, options)
  out = capsys.readouterr().out
  if action == "plan":
    assert "0 runs" in out
  else:
    assert "| NCS with SPICE | paper | 0.729 | 0.536 |" in out
    assert "| | jitr | not run | not run |" in out
