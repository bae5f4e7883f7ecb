"""Files the app tests build or compare: a fake ``*_precomp`` folder, a tiny precomp run's
config and the workdir a finished run leaves, folder snapshots."""

from __future__ import annotations

import hashlib
import pathlib

import ml_collections
import numpy as np

from configs import default
from jitr import fileio
from jitr.experiment import workdir as workdir_lib
from jitr.experiment.run_config import resolved_config

WORDS = ("a", "dog", "cat", "runs", "sits", "red", "blue", "on", "grass", "mat")


def write_precomp(
  root,
  n_images: int = 20,
  n_eval: int = 4,
  *,
  dataset: str = "f30k_precomp",
  captions_per_image: int = 5,
) -> pathlib.Path:
  """``root/<dataset>`` with random ``{split}_ims.npy`` ``[n, 36, 2048]`` and
  ``captions_per_image`` random captions of 3-7 words per image: ``n_images`` train
  images, ``n_eval`` dev and test."""
  folder = pathlib.Path(root) / dataset
  folder.mkdir(parents=True)
  rng = np.random.default_rng(0)
  for split, n in (("train", n_images), ("dev", n_eval), ("test", n_eval)):
    np.save(folder / f"{split}_ims.npy", rng.normal(size=(n, 36, 2048)).astype(np.float32))
    count = captions_per_image * n
    caps = [" ".join(rng.choice(WORDS, size=rng.integers(3, 8))) for _ in range(count)]
    (folder / f"{split}_caps.txt").write_text("\n".join(caps) + "\n")
  return folder


def snapshot(root) -> dict[str, str]:
  """``{relative path: sha256}`` of every file under ``root``."""
  root = pathlib.Path(root)
  return {
    str(path.relative_to(root)): hashlib.sha256(path.read_bytes()).hexdigest()
    for path in sorted(root.rglob("*"))
    if path.is_file()
  }


def precomp_config(root) -> ml_collections.ConfigDict:
  """A tiny precomp run: triplet loss only (no relevance records), 6 steps of 16."""
  config = default.get_config()
  config.dataset = "f30k_precomp"
  config.precomp_root = str(root)
  config.data_dir = str(root / "cache")
  config.graded = ml_collections.ConfigDict({})
  config.loss = ml_collections.ConfigDict({"triplet": {"weight": 1.0, "margin": 0.2}})
  config.num_epochs = 1
  config.batch_size = 16
  config.eval_batch_size = 16
  config.log_every_steps = 2
  config.compilation_cache = False
  config.model.embed_dim = 16
  config.model.word_dim = 8
  return config


def finished_workdir(workdir, config) -> dict[str, str]:
  """A workdir as a finished run leaves it (its config.json, vocabulary, checkpoint files,
  metrics); returns its snapshot."""
  workdir_lib.write_config_once(resolved_config(config), str(workdir))  # as a run saves it
  fileio.write_json_atomic(workdir / "vocab.json", {"words": ["<pad>", "a"]})
  fileio.write_json_atomic(workdir / "metrics.json", {"full/rsum": 300.0})
  step = workdir / "checkpoints" / "latest" / "6"
  step.mkdir(parents=True)
  (step / "_CHECKPOINT_METADATA").write_bytes(b'{"step": 6}')
  return snapshot(workdir)
