"""jitr-eval --semantic: SAM's NCS@K and Semantic Recall@K of a workdir, with SPICE scores
computed elsewhere and with CIDEr-D. The documented commands run as written (the SPICE
snippet of docs/relevance.md with a stand-in for pycocoevalcap's Java scorer), and their
numbers equal SAM's formula in numpy on the similarity matrix jitr-eval scores, with SPICE
read from the file and CIDEr-D from pycocoevalcap (idf over the split's images)."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import types
from pathlib import Path

import numpy as np
import pytest

from jitr.data.relevance_reader import RelevanceRecordsError
from jitr.experiment import ExtraMetrics, evaluate
from jitr.experiment.evaluator import Evaluator
from jitr.experiment.semantic_scores import SemanticSource, semantic_scores
from jitr.experiment.stored_relevance import external_records_dir
from jitr.relevance.precompute import PrecomputeOptions, precompute_external_scores
from tests.experiment.test_evaluate_workdir import make_workdir
from tests.file_fixtures import precomp_config, snapshot, write_precomp

REPO = Path(__file__).resolve().parents[2]
KS = (1, 5, 10)  # SAM's cut-offs


def section(page: str, heading: str) -> str:
  """The text of ``page`` under ``heading`` up to the next heading."""
  text = (REPO / "docs" / page).read_text(encoding="utf-8")
  return re.split(r"\n#{2,3} ", text.split(heading, 1)[1], maxsplit=1)[0]


def documented_commands() -> list[list[str]]:
  """docs/evaluation.md's ``--semantic`` commands, each split as the shell would."""
  blocks = re.findall(r"```bash\n(.*?)```", section("evaluation.md", "### NCS and Semantic"), re.S)
  assert len(blocks) == 2, blocks
  lines = "\n".join(blocks).replace("\\\n", " ").splitlines()
  return [shlex.split(line) for line in lines if line.strip()]


def spice_snippet() -> str:
  """docs/relevance.md's Python snippet that scores a split's pairs with pycocoevalcap."""
  blocks = re.findall(r"```python\n(.*?)```", section("relevance.md", "## Scores computed"), re.S)
  (snippet,) = [b for b in blocks if "Spice().compute_score" in b]
  return snippet


def word_f1(candidate: str, references: list[str]) -> float:
  """A stand-in for SPICE's F-score: the F1 of the candidate's words against its references'."""
  words, refs = set(candidate.split()), {w for r in references for w in r.split()}
  hits = len(words & refs)
  return 0.0 if hits == 0 else 2 * hits / (len(words) + len(refs))


class StandInSpice:
  """pycocoevalcap's ``Spice`` without Java: ``compute_score`` checks and returns what the
  real one does (the mean and one dict per candidate, in the order of ``sorted(gts)``)."""

  def compute_score(self, gts, res):
    assert sorted(gts) == sorted(res)
    per_candidate = []
    for key in sorted(gts):
      assert isinstance(res[key], list) and len(res[key]) == 1 and gts[key]
      f = word_f1(res[key][0], gts[key])
      per_candidate.append({"All": {"f": f, "pr": f, "re": f}, "Object": {"f": f}})
    return float(np.mean([s["All"]["f"] for s in per_candidate])), per_candidate


def run_spice_snippet(cwd: Path) -> None:
  """The snippet as written, in ``cwd``, with the stand-in as ``pycocoevalcap.spice.spice``."""
  stand_in = types.ModuleType("pycocoevalcap.spice.spice")
  stand_in.Spice = StandInSpice
  with pytest.MonkeyPatch.context() as patch:
    patch.setitem(sys.modules, "pycocoevalcap.spice.spice", stand_in)
    patch.chdir(cwd)
    exec(compile(spice_snippet(), "docs/relevance.md", "exec"), {})


def console(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
  exe = shutil.which(args[0], path=os.path.dirname(sys.executable)) or args[0]
  env = {**os.environ, "PYTHONPATH": str(REPO), "TF_CPP_MIN_LOG_LEVEL": "3"}
  env["XLA_FLAGS"] = " ".join(
    f for f in env.get("XLA_FLAGS", "").split() if "host_platform_device_count" not in f
  )
  return subprocess.run(
    [exe, *args[1:]], cwd=cwd, env=env, capture_output=True, text=True, timeout=600
  )


@pytest.fixture(scope="module")
def documented_run(tmp_path_factory):
  """A folder as the docs assume it (``data/f30k_precomp``, ``workdirs/f30k``: an untrained
  VSE++ saved as its best checkpoint), ``spice_test.json`` from the snippet, and the
  documented commands run there; returns the folder and ``{--semantic: metrics.json}``."""
  root = tmp_path_factory.mktemp("sam_ncs")
  write_precomp(root / "data", 20, n_eval=12)  # test: 12 images, 60 captions
  make_workdir(root / "workdirs" / "f30k", precomp_config(root / "data"))
  run_spice_snippet(root)
  reports = {}
  for args in documented_commands():
    done = console(args, root)
    assert done.returncode == 0, (args, done.stderr[-3000:])
    if args[0] == "jitr-eval":
      semantic = next(a.split("=", 1)[1] for a in args if a.startswith("--semantic="))
      path = root / "workdirs" / "f30k" / "eval_test" / "metrics.json"
      reports[semantic] = json.loads(path.read_text())
      assert f"semantic scores {semantic}" in path.with_name("metrics.md").read_text()
  return root, reports


@pytest.mark.slow  # the documented commands, each a process
def test_the_spice_snippet_scores_every_pair_of_the_split(documented_run):
  root, _ = documented_run
  scores = json.loads((root / "spice_test.json").read_text())
  captions = (root / "data" / "f30k_precomp" / "test_caps.txt").read_text().splitlines()
  assert sorted(scores, key=int) == [str(i) for i in range(12)]
  assert all(sorted(row, key=int) == [str(j) for j in range(60)] for row in scores.values())
  assert scores["3"]["17"] == word_f1(captions[17], captions[15:20])


def sam_semantic_metrics(sim: np.ndarray, phi: np.ndarray, owner: np.ndarray) -> dict:
  """SAM's NCS@K and Semantic Recall@K (N = 1), in percent, both directions: each query's
  annotated positives removed from its ranking by ``sim`` and from its ideal ranking by
  ``phi`` (ties by the lower index); NCS@K = sum over queries of the retrieved top K's phi /
  sum of the ideal top K's; SR@K = the share of queries whose best item by phi is retrieved
  in the top K. A caption query's phi of image i is ``phi[i, caption]``."""
  positives = owner[None, :] == np.arange(sim.shape[0])[:, None]
  out = {}
  for d, scores, semantic, own in (
    ("i2t", sim, phi, positives),
    ("t2i", sim.T, phi.T, positives.T),
  ):
    retrieved, ideal, hit = [], [], []
    for q in range(scores.shape[0]):
      others = np.flatnonzero(~own[q])
      ranked = others[np.argsort(-scores[q, others], kind="stable")]
      best = others[np.argsort(-semantic[q, others], kind="stable")]
      retrieved.append(semantic[q, ranked])
      ideal.append(semantic[q, best])
      hit.append([best[0] in ranked[:k] for k in KS])
    for n, k in enumerate(KS):
      total = sum(r[:k].sum() for r in retrieved) / sum(i[:k].sum() for i in ideal)
      out[f"semantic/{d}/NCS@{k}"] = 100 * total
      out[f"semantic/{d}/SR@{k}"] = 100 * np.mean([h[n] for h in hit])
  return out


def cider_matrix(captions: list[str], per_image: int = 5) -> np.ndarray:
  """SAM's CIDEr-D matrix with pycocoevalcap: every caption against each image's references.
  Every image's references enter the document frequencies once per caption, so the idf is
  the one over the split's images (``log N_img - log df``) that SAM's matrix uses."""
  from pycocoevalcap.cider.cider import Cider

  refs = [captions[i : i + per_image] for i in range(0, len(captions), per_image)]
  pairs = [(i, j) for i in range(len(refs)) for j in range(len(captions))]
  gts = {p: refs[i] for p, (i, j) in enumerate(pairs)}
  res = {p: [captions[j]] for p, (i, j) in enumerate(pairs)}
  _, scores = Cider().compute_score(gts, res)
  return np.asarray(scores).reshape(len(refs), len(captions))


def spice_matrix(root: Path, shape: tuple[int, int]) -> np.ndarray:
  """The scores of ``spice_test.json`` as ``[N_img, N_cap]``, 0 where it has none."""
  spice = np.zeros(shape)
  for i, row in json.loads((root / "spice_test.json").read_text()).items():
    for j, score in row.items():
      spice[int(i), int(j)] = score
  return spice


@pytest.mark.slow  # the documented commands, each a process
def test_documented_commands_report_sams_ncs_with_spice_and_cider(documented_run):
  root, reports = documented_run
  member = evaluate.load_member(str(root / "workdirs" / "f30k"))
  model, state = evaluate.restore_member(member, "best")
  splits = member.data.splits
  evaluator = Evaluator(model, splits, None, None, batch_size=member.config.eval_batch_size)
  sim = evaluator.similarity("test", state.variables)  # as jitr-eval scores the split
  owner = np.asarray(splits["test"].caption_image)
  spice = spice_matrix(root, sim.shape)
  captions = (root / "data" / "f30k_precomp" / "test_caps.txt").read_text().splitlines()
  for semantic, phi in (("topk:spice", spice), ("topk:cider", cider_matrix(captions))):
    want = sam_semantic_metrics(sim, phi, owner)
    got = {k: v for k, v in reports[semantic].items() if k.startswith("semantic/")}
    assert got.keys() == want.keys()
    for key, value in want.items():
      assert got[key] == pytest.approx(value, abs=1e-3), (semantic, key)
    assert reports[semantic]["full/rsum"] == reports["topk:spice"]["full/rsum"]
  assert 0 < want["semantic/i2t/NCS@10"] < 100  # a real ranking: neither nothing nor ideal
  kept = (root / "data" / "cache" / "relevance" / "f30k_precomp-test").glob("cider-*")
  assert [p.name[:12] for p in kept] == ["cider-top60-"]  # every caption of the split kept


def test_semantic_scores_that_do_not_fit_are_refused_before_anything_is_written(
  documented_run, tmp_path
):
  root, _ = documented_run
  workdir = str(root / "workdirs" / "f30k")
  records = tmp_path / "test_spice"
  precompute_external_scores(
    str(root / "data" / "f30k_precomp" / "test_caps.txt"),
    f"spice={root / 'spice_test.json'}",
    str(records),
    options=PrecomputeOptions(log=lambda _: None),
  )
  before = snapshot(root / "workdirs")
  cases = [
    (
      {"extra": ExtraMetrics(SemanticSource("topk:spice"))},
      ValueError,
      "semantic scores 'topk:spice': spice is not an estimator jitr computes (one of cider, "
      f"lsa, sentence, tokens) and {root / 'data' / 'cache' / 'relevance' / 'f30k_precomp-test'}"
      "/spice holds no records of it: give the folder of the records that jitr-precompute "
      f"--captions={root / 'data' / 'f30k_precomp' / 'test_caps.txt'} --scores=spice=FILE wrote",
    ),
    (
      {"extra": ExtraMetrics(SemanticSource("topk:spice", records=str(records))), "split": "val"},
      RelevanceRecordsError,
      f"{records / 'relevance.json'}: field 'dataset.fingerprint' is ",
    ),
    (
      {"extra": ExtraMetrics(SemanticSource("topk:bleu", records=str(records)))},
      ValueError,
      f"{records}: records of the estimator 'spice', expected 'bleu' (topk:bleu)",
    ),
    (
      {"extra": ExtraMetrics(SemanticSource("vectors:sentence"))},
      ValueError,
      "semantic scores 'vectors:sentence': expected topk:NAME, the top-K scores of relevance "
      "records (e.g. topk:cider, topk:spice)",
    ),
    (
      {"extra": ExtraMetrics(SemanticSource("topk:cider")), "protocol": "official"},
      ValueError,
      "semantic scores: the official protocol reports Recall@K only",
    ),
  ]
  for options, error, message in cases:
    with pytest.raises(error) as err:
      evaluate.evaluate_workdir(workdir, **{"split": "test", **options})
    assert str(err.value).startswith(message), str(err.value)
  assert snapshot(root / "workdirs") == before
  # without --semantic_records: the records in the data folder's place for them, if any
  data_dir = str(tmp_path / "cache")
  shutil.copytree(records, external_records_dir(data_dir, "f30k_precomp/test", "spice"))
  config = evaluate.load_member(workdir).config
  phi = semantic_scores("topk:spice", config, data_dir, "test")
  np.testing.assert_allclose(phi, spice_matrix(root, phi.shape), rtol=1e-6)
