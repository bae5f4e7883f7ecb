"""The documented zero-shot commands give open_clip's own retrieval: an open_clip model of
random weights saved as open_clip saves a state dict, scored by ``jitr-train
--config.num_epochs=0`` and ``jitr-eval`` (jitr's console scripts, run from the project's
own environment, ``$JITR_MAIN_VENV``, default ``.venv``) on a generated Karpathy folder,
has the R@K that open_clip's model, preprocessing and tokenizer give on the same images and
captions. Runs in the environment ``.ci/open_clip_parity.sh`` makes."""

from __future__ import annotations

import json
import os
import subprocess

import numpy as np
import open_clip
import pytest
import torch
from PIL import Image

from tests.data.karpathy_folder import TINY_TOWER, write_karpathy_folder

pytestmark = pytest.mark.open_clip
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# the recalls agree when no best positive is closer than this to the 1st, 5th or 10th
# negative of its row (the float32 towers' unit embeddings agree within 1e-5 per component)
MARGIN = 2e-5


def _console_script(name: str) -> str:
  venv = os.environ.get("JITR_MAIN_VENV", os.path.join(REPO, ".venv"))
  path = os.path.join(venv, "bin", name)
  if not os.path.exists(path):
    pytest.fail(f"{path}: missing; set JITR_MAIN_VENV to the environment scripts/test.sh made")
  return path


def _run(*args: str) -> str:
  env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
  done = subprocess.run(args, cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
  assert done.returncode == 0, done.stderr[-3000:]
  return done.stdout


def _open_clip_scores(tower_json: str, images: list[str], captions: list[str], weights: str):
  """open_clip's cosine matrix [images, captions] for its model of ``tower_json`` with random
  weights (its init, jittered), which it saves as a state dict at ``weights``."""
  open_clip.add_model_config(tower_json)
  name = os.path.basename(tower_json).removesuffix(".json")
  torch.manual_seed(0)
  model, _, preprocess = open_clip.create_model_and_transforms(name)
  with torch.no_grad():
    for p in model.parameters():
      p.add_(0.05 * torch.randn_like(p))
  torch.save(model.state_dict(), weights)
  model.eval()
  tokenizer = open_clip.get_tokenizer(name)
  with torch.no_grad():
    pixels = torch.stack([preprocess(Image.open(p)) for p in images])
    u = model.encode_image(pixels, normalize=True)
    v = model.encode_text(tokenizer(captions), normalize=True)
  return (u @ v.T).double().numpy()


def _ranks(scores: np.ndarray, positive: np.ndarray) -> tuple[np.ndarray, float]:
  """The rank of each row's best positive (0 = first) and the margin of R@1, 5, 10: the
  smallest gap between that score and the row's 1st, 5th and 10th negative."""
  best = np.where(positive, scores, -np.inf).max(axis=1, keepdims=True)
  negatives = np.where(positive, -np.inf, scores)
  ranks = np.sum(negatives > best, axis=1)
  ordered = -np.sort(-negatives, axis=1)[:, [0, 4, 9]]
  return ranks, float(np.min(np.abs(ordered - best)))


def _recalls(ranks: np.ndarray) -> dict[int, float]:
  return {k: 100.0 * float(np.mean(ranks < k)) for k in (1, 5, 10)}


def test_zero_shot_commands_give_open_clip_recall(tmp_path):
  json_path, folder = write_karpathy_folder(
    str(tmp_path), counts=(("train", 8), ("val", 8), ("test", 40))
  )
  with open(json_path) as f:
    split_file = json.load(f)
  for image in split_file["images"]:  # captions of their own: no two score exactly alike
    for n, sentence in enumerate(image["sentences"]):
      sentence["raw"] += f" in picture {image['imgid']} view {n}"
  with open(json_path, "w") as f:
    json.dump(split_file, f)
  test = [image for image in split_file["images"] if image["split"] == "test"]
  tower = tmp_path / "tiny-clip.json"
  tower.write_text(json.dumps(TINY_TOWER))
  captions = [s["raw"] for image in test for s in image["sentences"][:5]]
  owner = np.repeat(np.arange(len(test)), 5)
  weights = str(tmp_path / "tiny.pt")
  scores = _open_clip_scores(
    str(tower), [os.path.join(folder, image["filename"]) for image in test], captions, weights
  )
  i2t, i2t_gap = _ranks(scores, owner[None, :] == np.arange(len(test))[:, None])
  t2i, t2i_gap = _ranks(scores.T, owner[:, None] == np.arange(len(test))[None, :])
  assert min(i2t_gap, t2i_gap) > MARGIN  # the fixture's ranking is not decided by a tie

  workdir = str(tmp_path / "zero_shot")
  _run(
    _console_script("jitr-train"),
    "--config=configs/clip.py:infonce",
    f"--workdir={workdir}",
    "--config.num_epochs=0",
    "--config.dataset=mini_images",
    f"--config.karpathy.json={json_path}",
    f"--config.karpathy.images={folder}",
    f"--config.model.tower={tower}",
    f"--config.model.weights={weights}",
    "--config.batch_size=8",
    f"--config.data_dir={tmp_path / 'data'}",
  )
  _run(_console_script("jitr-eval"), f"--workdir={workdir}", "--split=test")
  with open(os.path.join(workdir, "eval_test", "metrics.json")) as f:
    metrics = json.load(f)
  for direction, ranks in (("i2t", i2t), ("t2i", t2i)):
    for k, value in _recalls(ranks).items():
      assert metrics[f"full/{direction}/R@{k}"] == pytest.approx(value, abs=1e-9), (direction, k)
  with open(os.path.join(workdir, "metrics.json")) as f:  # the run's own test score
    assert json.load(f)["rsum"] == pytest.approx(metrics["rsum"])
