"""Faults of the apps' input that end in one line ``APP: error: ...`` and exit status 1, with
nothing written: a config file that does not load while overrides are given, a
``configs/*.py:ARG`` whose ARG is misspelt, an override into an empty group or below a value,
an empty ``--estimators=``, a NUL character in a caption file, a judgments file that is not
UTF-8, a damaged jitr_shapes build.

The library units of the same faults: tests/relevance/test_input_faults.py,
tests/data/test_shapes_damage.py.
"""

import os
import shutil
import subprocess
import sys

import pytest

from configs import paper, shapes
from jitr.apps import _one_line as _cli
from jitr.papers import shipped_configs as _config_files
from tests.apps.test_faults import REPO, _jitr_train, _last_line

SHAPES_NAMES = (
  f"NAME one of {shapes.VARIANTS} and MODEL one of {tuple(shapes.MODELS)}"  # as the file says
)
PAPER_NAMES = (
  f"DATA one of {paper.DATASETS}, MODEL one of {tuple(paper.MODELS)} and LOSS one of {paper.LOSSES}"
)


def shipped_suffix() -> str:
  """What a --config error of a file not found adds: the shipped config files."""
  folder = _config_files.shipped_configs_dir()
  forms = [f"configs/{form}" for form, _ in _config_files.shipped_configs(folder)]
  assert "configs/default.py" in forms and "configs/clip.py:LOSS" in forms, forms
  return "; expected a config file, e.g. one of the shipped " + ", ".join(forms)


def _app(name: str, *args: str, cwd) -> subprocess.CompletedProcess:
  """Runs the console script ``name`` with ``args`` in ``cwd``."""
  exe = shutil.which(name) or str(os.path.join(os.path.dirname(sys.executable), name))
  env = {**os.environ, "PYTHONPATH": str(REPO), "TF_CPP_MIN_LOG_LEVEL": "3"}
  return subprocess.run([exe, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def _train_error(tmp_path, *args: str) -> str:
  """jitr-train's stderr for ``args``, which must fail with exit 1, one line and no files."""
  proc = _jitr_train(*args, f"--workdir={tmp_path / 'run'}", cwd=tmp_path)
  _, err = proc.communicate(timeout=300)
  assert proc.returncode == 1, err[-3000:]
  assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err[-3000:]
  assert not (tmp_path / "run").exists()
  return err.strip()


# ---------------------------------------------------------------- --config that does not load
@pytest.mark.parametrize(
  ("source", "cause"),
  [
    (None, "[Errno 2] No such file or directory: '{path}'"),
    (b"import ml_collections\n\ndef get_config(:\n", None),
  ],
  ids=["missing", "syntax-error"],
)
def test_a_config_file_that_does_not_load_with_overrides_is_one_line(tmp_path, source, cause):
  path = tmp_path / "cfg.py"
  if source is not None:
    path.write_bytes(source)
  err = _train_error(tmp_path, f"--config={path}", "--config.batch_size=3")
  if cause is not None:
    assert err == (
      f"jitr-train: error: --config={path}: could not load the config file: "
      + cause.format(path=path)
      + shipped_suffix()
    )
  else:
    assert err.startswith(f"jitr-train: error: {path}:3: cannot load the config file: ")


def test_a_config_file_whose_get_config_returns_nothing_is_one_line(tmp_path):
  path = tmp_path / "cfg.py"
  path.write_text("def get_config():\n  pass\n")
  assert _train_error(tmp_path, f"--config={path}") == (
    f"jitr-train: error: --config={path}: get_config() returned None; expected it to return "
    "the config (a ConfigDict)"
  )


# ---------------------------------------------------------------- misspelt configs/*.py:ARG
@pytest.mark.parametrize(
  ("spec", "names"),
  [
    ("shapes.py:tripplet", SHAPES_NAMES),
    ("shapes.py:triplet,sgrr", SHAPES_NAMES),
    ("paper.py:f30k,vsepp,sndcgg", PAPER_NAMES),
    ("paper.py:f31k,vsepp,sndcg", PAPER_NAMES),
    ("paper.py:f30k", PAPER_NAMES),
  ],
)
def test_a_misspelt_config_variant_is_one_line_listing_the_valid_names(tmp_path, spec, names):
  path = REPO / "configs" / spec
  err = _train_error(tmp_path, f"--config={path}")
  file, _, arg = spec.partition(":")
  expected = "NAME[,MODEL]" if file == "shapes.py" else "DATA,MODEL,LOSS"
  assert err == (
    f"jitr-train: error: --config={path}: configs/{file}: expected {expected} with {names}; "
    f"got {arg!r}"
  )


def test_config_function_error_is_none_for_other_flag_errors():
  assert _cli.config_function_error(ValueError("flag --x=0: 0 is not a positive integer")) is None


# ---------------------------------------------------------------- overrides into empty groups
def test_an_override_into_an_empty_group_says_what_is_expected(tmp_path):
  err = _train_error(
    tmp_path,
    f"--config={REPO / 'configs' / 'shapes.py'}:triplet",
    "--config.graded.relevance=oracle",
  )
  assert err == (
    "jitr-train: error: --config.graded.relevance=oracle: unknown field 'relevance' of "
    "config.graded (valid fields: none: config.graded is empty in this config file and an "
    "override cannot add a field; set config.graded.relevance in the config file)"
  )


def test_an_override_below_a_value_is_one_line(tmp_path):
  err = _train_error(
    tmp_path, f"--config={REPO / 'configs' / 'default.py'}", "--config.graded.relevance.x=1"
  )
  assert err == (
    "jitr-train: error: --config.graded.relevance.x=1: unknown field 'x' of "
    "config.graded.relevance (valid fields: none: it is a value, not a group)"
  )


# ---------------------------------------------------------------- relevance apps
TOKENS = (
  "a.jpg#0\tA dog runs on the grass .\na.jpg#1\tA brown dog runs outside .\n"
  "b.jpg#0\tA man rides a bike .\nb.jpg#1\tA man on a bicycle .\n"
)
JUDGED = "a.jpg\ta.jpg#0\t1\t3\t0\na.jpg\tb.jpg#1\t0\t0\t3\nb.jpg\ta.jpg#1\t0.5\t1\t2\n"


@pytest.fixture()
def flickr_files(tmp_path):
  (tmp_path / "Flickr8k.token.txt").write_text(TOKENS)
  (tmp_path / "CrowdFlowerAnnotations.txt").write_text(JUDGED)
  return tmp_path


@pytest.mark.parametrize("app", ["jitr-relevance-agreement", "jitr-relevance-calibrate"])
def test_an_empty_estimators_list_is_refused_in_one_line(flickr_files, app):
  before = sorted(os.listdir(flickr_files))
  args = ["--captions=Flickr8k.token.txt", "--judgments=CrowdFlowerAnnotations.txt"]
  if app == "jitr-relevance-calibrate":
    args.append("--output_dir=tables")
  out = _app(app, *args, "--estimators=", cwd=flickr_files)
  assert out.returncode == 1, out.stdout + out.stderr[-2000:]
  assert out.stderr.strip() == (
    f"{app}: error: estimators: expected one or more of ['cider', 'lsa', 'sentence', "
    "'tokens'], got none"
  )
  assert sorted(os.listdir(flickr_files)) == before


def test_a_non_utf8_judgments_file_names_its_line(flickr_files):
  judged = flickr_files / "CrowdFlowerAnnotations.txt"
  judged.write_bytes(JUDGED.encode().replace(b"b.jpg#1", b"b.jpg#\xe91"))
  out = _app(
    "jitr-relevance-agreement",
    "--captions=Flickr8k.token.txt",
    "--judgments=CrowdFlowerAnnotations.txt",
    "--estimators=cider",
    cwd=flickr_files,
  )
  assert out.returncode == 1
  assert _last_line(out.stderr) == (
    "jitr-relevance-agreement: error: CrowdFlowerAnnotations.txt:2: line 2 is not UTF-8 "
    "(byte 0xe9 at column 13); expected UTF-8 text"
  )
  assert "Traceback" not in out.stderr


def test_a_nul_character_in_a_caption_file_names_its_line(tmp_path):
  caps = ["a dog runs on grass", "a cat sits", "a red ball", "blue mat on grass", "a dog"] * 2
  caps[7] = "a c\0at sits"
  (tmp_path / "caps.txt").write_text("\n".join(caps) + "\n")
  out = _app(
    "jitr-precompute", "--captions=caps.txt", "--estimator=cider", "--out=rel", cwd=tmp_path
  )
  assert out.returncode == 1
  assert _last_line(out.stderr) == (
    "jitr-precompute: error: caps.txt:8: line 8 holds a NUL character (byte 0x00 at column 4); "
    "expected UTF-8 text"
  )
  assert "Traceback" not in out.stderr
  assert os.listdir(tmp_path) == ["caps.txt"]


# ---------------------------------------------------------------- damaged jitr_shapes build
@pytest.mark.slow  # 15 s: builds jitr_shapes/tiny; tests/data/test_shapes_damage.py is the unit
def test_an_empty_shapes_record_file_is_one_line_with_the_fix(tmp_path):
  from jitr.data.shapes import tfds as shapes_tfds

  data_dir = tmp_path / "tfds"
  b = shapes_tfds.build(str(data_dir), "tiny")
  (path,) = b.info.splits["train"].filepaths
  open(path, "wb").close()
  err = _train_error(
    tmp_path,
    f"--config={REPO / 'configs' / 'default.py'}",
    "--config.shapes_config=tiny",
    f"--config.data_dir={data_dir}",
    "--config.graded.relevance=oracle",
    "--config.compilation_cache=False",
  )
  assert err == (
    f"jitr-train: error: {path}: TFRecord file of jitr_shapes/tiny split 'train' is empty "
    f"(0 bytes); delete {b.data_dir} and run again to rebuild it"
  )
