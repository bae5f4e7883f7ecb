"""``jitr-import``: official SGR, SAF and VSRN checkpoints, written the way the official code
of that era wrote them (a legacy non-zip ``torch.save``, ``opt`` an ``argparse.Namespace``,
SGRAF's JSON vocabulary or a pickled ``Vocabulary``), become workdirs; docs/models.md's
commands (import, evaluate, ensemble, fine-tune) run as written through the console
scripts, and ``jitr-eval``'s Recall@K equal those of the PyTorch reference networks (written
from the official equations) on the same captions and features. A refused import is one line
and writes nothing: once through the console script, the other refusals through
``import_official`` itself (the console script prints its message after
``jitr-import: error: ``)."""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import logging
import os
import pathlib
import pickle
import re
import shlex
import shutil
import subprocess
import sys
import types

import numpy as np
import pytest

from jitr.data import precomp
from tests.evaluation.test_official import reference_i2t, reference_t2i
from tests.file_fixtures import write_precomp
from tests.rank_gaps import assert_recall_within_ties, owner_of

torch = pytest.importorskip("torch")

REPO = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "models"))
import sgraf_reference  # noqa: E402
import vsrn_reference  # noqa: E402

pytestmark = pytest.mark.slow

# The tiny networks' sizes (the features are write_precomp's [N, 36, 2048]).
SGRAF_DIMS = dict(img_dim=2048, word_dim=8, embed_dim=16, sim_dim=8, num_region=36)
VSRN_DIMS = dict(img_dim=2048, word_dim=8, embed_dim=16, caption_hidden_dim=6, caption_word_dim=4)
# A tiny run of the paper configs: what the test appends to the documented commands.
TINY_RUN = [
  "--config.graded={}",
  "--config.loss={'triplet': {'weight': 1.0, 'margin': 0.2}}",
  "--config.batch_size=16",
  "--config.eval_batch_size=16",
  "--config.log_every_steps=2",
  "--config.compilation_cache=False",
]
# One length bucket: one compiled scoring branch (the cut is exact: the scores are the same)
ONE_BUCKET = ["--config.model.length_buckets=1"]
TINY_SGR_MODEL = ["--config.model.embed_dim=16", "--config.model.word_dim=8"]
TINY_SGR_MODEL += ["--config.model.sim_dim=8", *ONE_BUCKET]


def _with_reference_dims(module, dims: dict, vocab: int, build):
  """``build()`` with the reference module's sizes set to ``dims`` / ``vocab``, restored after
  (other tests of this process use its tiny defaults)."""
  saved = dict(module.DIMS), module.VOCAB
  module.DIMS.update(dims)
  module.VOCAB = vocab
  try:
    return build()
  finally:
    module.DIMS.clear()
    module.DIMS.update(saved[0])
    module.VOCAB = saved[1]


def save_legacy(path: pathlib.Path, parts, opt: argparse.Namespace) -> None:
  """What the official ``train.py``'s ``save_checkpoint`` writes, as a legacy torch save."""
  path.parent.mkdir(parents=True, exist_ok=True)
  checkpoint = {
    "epoch": 12,
    "model": [p.state_dict() for p in parts],
    "best_rsum": 321.5,
    "opt": opt,
    "Eiters": 4567,
  }
  torch.save(checkpoint, path, _use_new_zipfile_serialization=False)


def sgraf_vocab_json(path: pathlib.Path, words) -> None:
  path.parent.mkdir(parents=True, exist_ok=True)
  path.write_text(
    json.dumps(
      {
        "word2idx": {w: i for i, w in enumerate(words)},
        "idx2word": {str(i): w for i, w in enumerate(words)},
        "idx": len(words),
      }
    )
  )


def pickled_vocab(path: pathlib.Path, words) -> None:
  """``pickle.dump(vocab, f)`` of VSE++/VSRN's ``vocab.Vocabulary``."""

  class Vocabulary:
    pass

  module = types.ModuleType("vocab")
  Vocabulary.__module__, Vocabulary.__qualname__ = "vocab", "Vocabulary"
  module.Vocabulary = Vocabulary
  vocab = Vocabulary()
  vocab.word2idx = {w: i for i, w in enumerate(words)}
  vocab.idx2word = dict(enumerate(words))
  vocab.idx = len(words)
  sys.modules["vocab"] = module
  try:
    path.write_bytes(pickle.dumps(vocab, protocol=2))
  finally:
    del sys.modules["vocab"]


def documented_commands() -> list[list[str]]:
  """docs/models.md's "Use an official checkpoint" commands, each split as the shell would."""
  page = (REPO / "docs" / "models.md").read_text(encoding="utf-8")
  after = page.split("### Use an official checkpoint", 1)[1]
  section = re.split(r"\n#{2,3} ", after, maxsplit=1)[0]  # up to the next heading
  (block,) = re.findall(r"```bash\n(.*?)```", section, re.S)
  return [shlex.split(line, comments=True) for line in block.replace("\\\n", " ").splitlines()]


def console(*args: str, cwd: pathlib.Path) -> subprocess.CompletedProcess:
  exe = shutil.which(args[0], path=os.path.dirname(sys.executable)) or args[0]
  env = {**os.environ, "PYTHONPATH": str(REPO), "TF_CPP_MIN_LOG_LEVEL": "3"}
  env["XLA_FLAGS"] = " ".join(
    f for f in env.get("XLA_FLAGS", "").split() if "host_platform_device_count" not in f
  )
  return subprocess.run(
    [exe, *args[1:]], cwd=cwd, env=env, capture_output=True, text=True, timeout=600
  )


def reference_sims(parts, forward, workdir: pathlib.Path, split: str = "test"):
  """``(sim, caption_image)``: the PyTorch reference ``parts``' similarity matrix of ``split``
  of the imported workdir's data (its captions tokenised by jitr with the imported
  vocabulary) and each caption's image."""
  from jitr import experiment
  from jitr.experiment.workdir import data_dir, read_trained_config

  config = read_trained_config(str(workdir))
  data = experiment.load_data(config, data_dir(config, str(workdir)), teachers=False)
  evaluated = data.splits[split]
  sim = forward(
    parts,
    np.array(evaluated.images, np.float32),  # copies: torch takes writable arrays
    np.array(evaluated.tokens, np.int64),
    np.array(evaluated.lengths, np.int64),
  )
  return sim, np.asarray(evaluated.caption_image)


def sgraf_sims(parts, images, tokens, lengths):
  return sgraf_reference.torch_forward(parts, images, tokens, lengths, train=False)


def vsrn_sims(parts, images, tokens, lengths):
  for p in parts:
    p.train(False)
  with torch.no_grad():
    img, _ = parts[0](torch.from_numpy(images))
    txt = parts[1](torch.from_numpy(tokens), list(lengths))
  return (img @ txt.T).numpy()


def jitr_similarity(workdir: pathlib.Path, split: str = "test") -> np.ndarray:
  """The test split's similarity matrix of ``workdir``'s best checkpoint, scored by jitr."""
  from jitr.experiment.evaluate import load_member, restore_member
  from jitr.experiment.evaluator import Evaluator

  member = load_member(str(workdir))
  model, state = restore_member(member, "best")
  data = member.data
  return Evaluator(model, data.splits, data.exact, data.folds, batch_size=16).similarity(
    split, state.variables
  )


def assert_recall_equal(report: dict, reference) -> None:
  """``report``'s Recall@K, ranks and RSUM those of the reference ``(sim, caption_image)``:
  equal where no near-tie decides a rank (jitr's scores agree with the reference's to
  about 1e-7 here), between both ways of breaking it where one does."""
  sim, caption_image = reference
  keys = ("full/i2t/R@1", "full/i2t/R@5", "full/t2i/R@1", "full/t2i/R@5", "full/rsum")
  assert_recall_within_ties({k: report[k] for k in keys}, sim, caption_image, eps=1e-6)


@pytest.fixture(scope="module")
def official(tmp_path_factory):
  """A folder laid out as docs/models.md's commands expect: ``configs/``, ``data/`` (a
  generated f30k_precomp), ``official/`` (SGR, SAF and VSRN checkpoints, SGRAF's JSON and a
  pickled vocabulary); returns ``(root, {network: reference parts})``."""
  root = tmp_path_factory.mktemp("official")
  shutil.copytree(REPO / "configs", root / "configs")
  write_precomp(root / "data", n_images=20)
  words = precomp.build_precomp_vocab(root / "data" / "f30k_precomp", min_count=1).words
  parts = {}
  for module in ("SGR", "SAF"):
    parts[module] = _with_reference_dims(
      sgraf_reference, SGRAF_DIMS, len(words), lambda m=module: sgraf_reference.torch_model(m)
    )
    opt = argparse.Namespace(
      data_name="f30k_precomp", module_name=module, embed_size=16, word_dim=8, sim_dim=8,
      img_dim=2048, sgr_step=3, vocab_size=len(words), margin=0.2, max_violation=True,
    )  # fmt: skip
    save_legacy(root / "official" / module / "model_best.pth.tar", parts[module], opt)
  sgraf_vocab_json(root / "official" / "f30k_precomp_vocab.json", words)
  vsrn = _with_reference_dims(
    vsrn_reference, VSRN_DIMS, len(words), lambda: vsrn_reference.torch_vsrn(f30k=True)
  )
  parts["VSRN"] = vsrn[:2]  # the official checkpoint holds no caption model
  opt = argparse.Namespace(
    data_name="f30k_precomp", embed_size=16, word_dim=8, img_dim=2048, vocab_size=len(words)
  )
  save_legacy(root / "official" / "VSRN" / "model_best.pth.tar", parts["VSRN"], opt)
  pickled_vocab(root / "official" / "f30k_precomp_vocab.pkl", words)
  return root, parts


def test_the_documented_commands_import_evaluate_ensemble_and_fine_tune(official):
  root, parts = official
  commands = documented_commands()
  assert [c[0] for c in commands] == [
    "jitr-import", "jitr-import", "jitr-eval", "jitr-eval", "jitr-eval", "jitr-train"
  ]  # fmt: skip
  for command in commands:
    extra = [*TINY_RUN, *ONE_BUCKET] if command[0] == "jitr-import" else []
    if command[0] == "jitr-train":
      extra = [*TINY_RUN, *TINY_SGR_MODEL, "--config.num_epochs=1"]
    done = console(*command, *extra, cwd=root)
    assert done.returncode == 0, (command, done.stderr[-3000:])
  imported = root / "workdirs" / "official_sgr"
  record = json.loads((imported / "import.json").read_text())
  assert record["best_rsum"] == 321.5
  checkpoint = root / "official" / "SGR" / "model_best.pth.tar"
  assert record["sha256"] == hashlib.sha256(checkpoint.read_bytes()).hexdigest()
  report = json.loads((imported / "eval_test" / "metrics.json").read_text())
  assert_recall_equal(report, reference_sims(parts["SGR"], sgraf_sims, imported))
  # the ensemble: the mean of the SGR and SAF similarity matrices, as SGRAF's evalrank
  ensemble = json.loads((imported / "eval_test_ensemble" / "metrics.json").read_text())

  def mean_sims(both, *inputs):
    return (sgraf_sims(both[0], *inputs) + sgraf_sims(both[1], *inputs)) / 2

  expected = reference_sims((parts["SGR"], parts["SAF"]), mean_sims, imported)
  assert_recall_equal(ensemble, expected)
  # the official protocol: the official i2t / t2i on the members' mean similarity (float64)
  sims = [jitr_similarity(root / "workdirs" / name) for name in ("official_sgr", "official_saf")]
  mean = (sims[0].astype(np.float64) + sims[1].astype(np.float64)) / 2
  names = [f"full/{d}/{m}" for d in ("i2t", "t2i") for m in ("R@1", "R@5", "R@10", "medr", "meanr")]
  want = dict(zip(names, reference_i2t(mean) + reference_t2i(mean)))
  got = json.loads((imported / "eval_test_ensemble_official" / "metrics.json").read_text())
  if assert_recall_within_ties(got, mean, owner_of(mean), eps=1e-6) == 0:  # another process's
    assert {k: got[k] for k in names} == want
  tuned = json.loads((root / "workdirs" / "sgr_sndcg" / "config.json").read_text())
  assert tuned["init_from"] == str(imported)
  assert tuned["text"]["tokenizer"] == "nltk"  # the official vocabulary's, as its import
  assert (root / "workdirs" / "sgr_sndcg" / "metrics.json").is_file()


def tiny_paper_config(spec: str):
  """``configs/paper.py:SPEC`` with :data:`TINY_RUN`'s settings, for runs in this process."""
  from configs import paper

  config = paper.get_config(spec)
  config.precomp_root = "data"
  config.graded = {}
  config.loss = {"triplet": {"weight": 1.0, "margin": 0.2}}
  config.batch_size = config.eval_batch_size = 16
  config.log_every_steps = 2
  config.compilation_cache = False
  return config


def test_an_official_vsrn_imports_and_fine_tunes_with_a_fresh_caption_decoder(official, caplog):
  """(In this process: the console scripts' forms run in the documented-commands test.)"""
  from jitr import experiment
  from jitr.experiment.official_import import import_official

  root, parts = official
  workdir = root / "workdirs" / "official_vsrn"
  with contextlib.chdir(root):
    import_official(
      tiny_paper_config("f30k,vsrn,triplet"),
      "official/VSRN/model_best.pth.tar",
      "official/f30k_precomp_vocab.pkl",
      workdir,
      progress=False,
    )
  saved = json.loads((workdir / "config.json").read_text())
  assert saved["model"]["caption_weight"] == 0.0 and saved["model"]["feature_batch_norm"]
  # the official vocabulary tokenises captions as the official code: nltk.word_tokenize
  assert saved["text"]["tokenizer"] == "nltk"
  assert json.loads((workdir / "vocab.json").read_text())["tokenizer"] == "nltk"
  experiment.evaluate_workdir(str(workdir), split="test")
  report = json.loads((workdir / "eval_test" / "metrics.json").read_text())
  assert_recall_equal(report, reference_sims(parts["VSRN"], vsrn_sims, workdir))
  tuned = tiny_paper_config("f30k,vsrn,triplet")
  tuned.init_from, tuned.vocab_file = str(workdir), str(workdir / "vocab.json")
  tuned.num_epochs = 1
  tuned.model.embed_dim, tuned.model.word_dim = 16, 8
  tuned.model.caption_hidden_dim, tuned.model.caption_word_dim = 16, 8
  with contextlib.chdir(root), caplog.at_level(logging.WARNING):
    experiment.train_and_evaluate(tuned, str(root / "workdirs" / "vsrn_tuned"))
  assert "holds no VSRN caption decoder (official VSRN checkpoints have none): this run " in (
    caplog.text
  )


def test_a_bad_import_through_the_console_script_is_one_line_and_writes_nothing(official):
  root, _ = official
  done = console(
    "jitr-import", "--config=configs/paper.py:f30k,saf,triplet",
    "--checkpoint=official/SGR/model_best.pth.tar", "--vocab=official/f30k_precomp_vocab.json",
    "--workdir=workdirs/refused", "--config.precomp_root=data", *TINY_RUN, cwd=root,
  )  # fmt: skip
  assert done.returncode == 1
  assert done.stderr.strip().splitlines()[-1] == (
    "jitr-import: error: config.model.name='saf', but the checkpoint holds SGR: use a config "
    "of that network (e.g. configs/paper.py:DATA,sgr,LOSS)"
  )
  assert not (root / "workdirs" / "refused").exists()


def _refusal(root: pathlib.Path, workdir, *, spec="f30k,sgr,triplet", tokenizer="", **paths) -> str:
  """The ``jitr-import: error: ...`` line of an import (in this process, from ``root``, as
  the console script above) that must be refused without writing ``workdir``."""
  from configs import paper
  from jitr.experiment.official_import import import_official

  config = paper.get_config(spec)
  config.precomp_root = "data"
  config.text.tokenizer = tokenizer
  paths = {
    "checkpoint": "official/SGR/model_best.pth.tar",
    "vocab_file": "official/f30k_precomp_vocab.json",
    **paths,
  }
  with contextlib.chdir(root), pytest.raises(ValueError) as refused:
    import_official(config, workdir=workdir, **paths)
  return f"jitr-import: error: {refused.value}"


@pytest.mark.parametrize(
  ("spec", "paths", "message"),
  [
    (
      "coco,sgr,triplet",
      {},
      "jitr-import: error: the checkpoint's opt disagrees: opt.data_name='f30k_precomp', but "
      "config.dataset='coco_precomp'",
    ),
    (
      "f30k,sgr,triplet",
      {"vocab_file": "official/f30k_precomp_vocab_short.json"},
      "jitr-import: error: official/f30k_precomp_vocab_short.json: 13 words, but the "
      "checkpoint's word embedding has 14 rows: not the vocabulary it was trained with",
    ),
    (
      "f30k,sgr,triplet",
      {"checkpoint": "official/f30k_precomp_vocab.json"},
      "jitr-import: error: {root}/official/f30k_precomp_vocab.json: not a PyTorch checkpoint "
      "(expected a torch.save file: zip or legacy)",
    ),
  ],
  ids=["dataset", "vocabulary", "not-a-checkpoint"],
)
def test_a_bad_import_is_refused_before_anything_is_written(official, spec, paths, message):
  root, _ = official
  words = json.loads((root / "official" / "f30k_precomp_vocab.json").read_text())["idx2word"]
  short = [words[str(i)] for i in range(len(words) - 1)]
  sgraf_vocab_json(root / "official" / "f30k_precomp_vocab_short.json", short)
  assert _refusal(root, "workdirs/refused", spec=spec, **paths) == message.format(root=root)
  assert not (root / "workdirs" / "refused").exists()


def test_an_opt_that_disagrees_with_the_weights_is_refused(official, tmp_path):
  root, parts = official
  opt = argparse.Namespace(data_name="f30k_precomp", module_name="SGR", embed_size=1024)
  save_legacy(tmp_path / "model_best.pth.tar", parts["SGR"], opt)
  line = _refusal(root, tmp_path / "w", checkpoint=tmp_path / "model_best.pth.tar")
  assert line == (
    "jitr-import: error: the checkpoint's opt disagrees: opt.embed_size=1024, but the weights "
    "have embed_dim 16"
  )
  assert not (tmp_path / "w").exists()


def test_a_workdir_that_is_not_empty_is_refused(official, tmp_path):
  root, _ = official
  (tmp_path / "w").mkdir()
  (tmp_path / "w" / "notes.txt").write_text("mine")
  assert _refusal(root, tmp_path / "w") == (
    f"jitr-import: error: {tmp_path / 'w'}: not empty; jitr-import writes a new workdir"
  )
  assert os.listdir(tmp_path / "w") == ["notes.txt"]


def _import(root: pathlib.Path, workdir, batch_size: int = 16, **kwargs) -> dict:
  """The record of importing the official SGR (from ``root``, in this process)."""
  from configs import paper
  from jitr.experiment.official_import import import_official

  config = paper.get_config("f30k,sgr,triplet")
  config.precomp_root = "data"
  config.batch_size = batch_size
  with contextlib.chdir(root):
    return import_official(
      config,
      "official/SGR/model_best.pth.tar",
      "official/f30k_precomp_vocab.json",
      workdir,
      progress=False,
      **kwargs,
    )


def test_a_given_sha256_is_checked_before_reading_and_recorded(official, tmp_path):
  from jitr.experiment.official_import import UNVERIFIED
  from jitr.models.official_checkpoint import OfficialCheckpointError

  root, _ = official
  path = root / "official" / "SGR" / "model_best.pth.tar"
  digest = hashlib.sha256(path.read_bytes()).hexdigest()
  wrong = "0" * 64
  with pytest.raises(OfficialCheckpointError) as err:
    _import(root, tmp_path / "refused", sha256=wrong)
  assert str(err.value) == (
    f"{path}: its SHA-256 is {digest}, not the {wrong} given: a damaged copy or another file "
    "than the one published"
  )
  assert not (tmp_path / "refused").exists()
  with pytest.raises(OfficialCheckpointError, match="expected 64 hexadecimal digits"):
    _import(root, tmp_path / "refused", sha256="abc")
  record = _import(root, tmp_path / "plain")
  assert (record["sha256"], record["verified"]) == (digest, UNVERIFIED)  # a legacy file
  record = _import(root, tmp_path / "given", sha256=digest.upper())
  assert record["verified"] == "the given SHA-256"
  saved = json.loads((tmp_path / "given" / "import.json").read_text())
  assert saved["verified"] == "the given SHA-256"


def test_an_interrupted_import_leaves_no_workdir(official, tmp_path, monkeypatch):
  from jitr.training.checkpoints import Checkpoints

  root, _ = official

  def interrupted(self, *args):
    raise KeyboardInterrupt

  monkeypatch.setattr(Checkpoints, "save_best", interrupted)  # after the latest was saved
  (tmp_path / "w").mkdir()  # an empty workdir is allowed; it is left as it was
  with pytest.raises(KeyboardInterrupt):
    _import(root, tmp_path / "w")
  assert os.listdir(tmp_path) == ["w"] and os.listdir(tmp_path / "w") == []
  monkeypatch.undo()
  _import(root, tmp_path / "w")  # the rerun is not blocked by anything the first left
  assert sorted(os.listdir(tmp_path / "w")) == [
    "checkpoints",
    "config.json",
    "import.json",
    "inputs.json",
    "vocab.json",
  ]


def test_a_config_asking_for_jitrs_tokenizer_is_refused(official, tmp_path):
  root, _ = official
  assert _refusal(root, tmp_path / "w", tokenizer="jitr") == (
    "jitr-import: error: config.text.tokenizer: 'jitr', but an official vocabulary is a "
    "vocabulary of the 'nltk' tokenizer (the official code's); expected 'nltk' or ''"
  )
  assert not (tmp_path / "w").exists()


def test_a_train_split_smaller_than_the_batch_still_imports(official, tmp_path):
  # importing and evaluating take no training batch: 100 train captions, batch_size 1,000
  from jitr.experiment.evaluate import evaluate_workdir

  root, parts = official
  record = _import(root, tmp_path / "w", batch_size=1000)
  assert record["network"] == "sgr"
  got = evaluate_workdir(str(tmp_path / "w"), split="test", protocol="official")
  assert_recall_equal(got, reference_sims(parts["SGR"], sgraf_sims, tmp_path / "w"))
