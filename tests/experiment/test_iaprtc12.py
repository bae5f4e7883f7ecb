"""Precomp folders of any name and captions per image: IAPR TC-12 as LSEH releases it (one
caption per image) trains and evaluates with the paper config, its official protocol
equals a transcription of LSEH's ``evaluationIAPRTC12.py`` ``i2t`` / ``t2i``, and a folder
of another name needs ``config.captions_per_image``."""

from __future__ import annotations

import json

import numpy as np
import pytest

from configs import paper
from jitr import experiment
from jitr.evaluation import official
from jitr.experiment.run_config import check_train_config
from tests.file_fixtures import write_precomp


def lseh_iapr_i2t(sims):
  """yangong23/VSEnetworksLSEH ``IAPRTC12/evaluationIAPRTC12.py`` ``i2t``, line by line."""
  npts = sims.shape[0]
  ranks = np.zeros(npts)
  for index in range(npts):
    inds = np.argsort(sims[index])[::-1]
    rank = 1e20
    for i in range(index, index + 1, 1):
      tmp = np.where(inds == i)[0][0]
      if tmp < rank:
        rank = tmp
    ranks[index] = rank
  return _metrics(ranks)


def lseh_iapr_t2i(sims):
  """The same file's ``t2i``, line by line."""
  npts = sims.shape[0]
  ranks = np.zeros(npts)
  sims = sims.T
  for index in range(npts):
    for i in range(1):
      inds = np.argsort(sims[index + i])[::-1]
      ranks[index + i] = np.where(inds == index)[0][0]
  return _metrics(ranks)


def _metrics(ranks):
  r1 = 100.0 * len(np.where(ranks < 1)[0]) / len(ranks)
  r5 = 100.0 * len(np.where(ranks < 5)[0]) / len(ranks)
  r10 = 100.0 * len(np.where(ranks < 10)[0]) / len(ranks)
  return r1, r5, r10, np.floor(np.median(ranks)) + 1, ranks.mean() + 1


def test_official_recall_with_one_caption_per_image_equals_lseh_evaluation():
  rng = np.random.default_rng(3)
  sims = np.round(rng.normal(size=(40, 40)), 1)  # ties, as a saturated score leaves them
  got = official.official_recall(sims, per_image=1)
  names = [f"{d}/{m}" for d in ("i2t", "t2i") for m in ("R@1", "R@5", "R@10", "medr", "meanr")]
  assert {k: got[k] for k in names} == dict(zip(names, lseh_iapr_i2t(sims) + lseh_iapr_t2i(sims)))
  assert 0 < got["i2t/R@10"] < 100
  with pytest.raises(ValueError, match=r"expected \[N images, 1N captions\]"):
    official.official_recall(sims[:, :30], per_image=1)


def iapr_config(root, model: str = "vsepp"):
  """``configs/paper.py:iaprtc12,MODEL,triplet`` at a tiny size on ``root``'s folder."""
  config = paper.get_config(f"iaprtc12,{model},triplet")
  config.precomp_root = str(root)
  config.data_dir = str(root / "cache")
  config.graded = {}
  config.loss = {"triplet": {"weight": 1.0, "margin": 0.2, "mining": "max"}}
  config.num_epochs, config.batch_size, config.eval_batch_size = 1, 16, 16
  config.vocab_min_count = 1
  config.model.embed_dim, config.model.word_dim = 16, 8
  config.compilation_cache = False
  config.token_buckets = ()
  return config


@pytest.mark.slow
def test_iaprtc12_trains_and_evaluates_with_one_caption_per_image(tmp_path):
  write_precomp(tmp_path, 32, 10, dataset="iaprtc12_precomp", captions_per_image=1)
  config = iapr_config(tmp_path)
  data = experiment.load_data(config, str(tmp_path / "cache"))
  test = data.splits["test"]
  assert (test.images.shape[0], test.num_captions) == (10, 10)
  assert test.caption_image.tolist() == list(range(10))
  workdir = tmp_path / "run"
  metrics = experiment.train_and_evaluate(config, str(workdir)).metrics
  assert 0 <= metrics["full/rsum"] <= 600
  got = experiment.evaluate_workdir(str(workdir), split="test", protocol="official")
  from tests.apps.test_import_official import jitr_similarity

  sims = jitr_similarity(workdir).astype(np.float64)
  names = [f"full/{d}/{m}" for d in ("i2t", "t2i") for m in ("R@1", "R@5", "R@10", "medr", "meanr")]
  assert {k: got[k] for k in names} == dict(zip(names, lseh_iapr_i2t(sims) + lseh_iapr_t2i(sims)))
  saved = json.loads((workdir / "config.json").read_text())
  assert (saved["dataset"], saved["captions_per_image"]) == ("iaprtc12_precomp", 0)


def test_a_folder_of_another_name_needs_its_captions_per_image(tmp_path):
  write_precomp(tmp_path, 8, 4, dataset="mine_precomp", captions_per_image=2)
  config = iapr_config(tmp_path)
  config.dataset = "mine_precomp"
  with pytest.raises(ValueError) as err:
    check_train_config(config)
  assert str(err.value) == (
    "config.captions_per_image: mine_precomp is not a dataset jitr knows; give its captions "
    "per image (5 for Flickr30K / COCO-style folders, 1 for IAPR TC-12-style)"
  )
  config.captions_per_image = 2
  check_train_config(config)
  data = experiment.load_data(config, str(tmp_path / "cache"))
  assert data.splits["train"].caption_image.tolist() == [i // 2 for i in range(16)]
  config.captions_per_image = 3  # 16 captions are not 3 per image of 8
  with pytest.raises(ValueError, match="expected 3 captions per image"):
    experiment.load_data(config, str(tmp_path / "cache"))


@pytest.mark.parametrize(
  ("spec", "message"),
  [
    ("iaprtc12,cvse,lseh", "iaprtc12 runs the networks LSEH trains on it"),
    ("iaprtc12,vseinf_bigru,lseh", "iaprtc12 runs the networks LSEH trains on it"),
  ],
)
def test_iaprtc12_paper_configs_are_lseh_networks(spec, message):
  with pytest.raises(ValueError, match=message):
    paper.get_config(spec)
  config = paper.get_config("iaprtc12,sgr,lseh")
  assert (config.dataset, config.optimizer.learning_rate, config.num_epochs) == (
    "iaprtc12_precomp",
    4e-4,
    40,
  )
  assert config.loss.lseh.margin == 0.185
