"""Independent references for end-to-end tests: a workdir's best checkpoint scored on a whole
split at once, and Recall@K / median / mean rank computed by sorting in numpy (not through
jitr.evaluation)."""

from __future__ import annotations

import json
import pathlib

import jax
import ml_collections
import numpy as np
import pytest

from jitr import experiment
from jitr.data import pairs
from jitr.evaluation import EvalOptions, evaluate_retrieval
from jitr.evaluation.positives import positives_from_lists
from jitr.experiment.workdir import data_dir
from jitr.training.checkpoints import Checkpoints


def tower_similarity(workdir: str | pathlib.Path, split: str = "test"):
  """``(sim [N_img, N_cap], caption_image [N_cap], step)``: ``img @ txt.T`` (float64 numpy)
  of ``split`` from the flax towers of ``workdir``'s best checkpoint, each tower run on the
  whole split at once (no scorer blocks), and the checkpoint's step. The data are loaded
  from the workdir's config.json with its graded sources replaced by ``oracle``: the
  vocabulary and the evaluated split do not depend on them, and no stored relevance is read."""
  workdir = pathlib.Path(workdir).resolve()
  config = ml_collections.ConfigDict(json.loads((workdir / "config.json").read_text()))
  config.graded = ml_collections.ConfigDict({"relevance": "oracle"})
  data = experiment.load_data(config, data_dir(config, str(workdir)), teachers=False)
  train = data.splits["train"]
  steps = pairs.steps_per_epoch(train, config.batch_size)
  model, like = experiment.initial_state(config, len(data.vocab), train, steps)
  checkpoints = Checkpoints(str(workdir))
  state = checkpoints.restore(like, which="best")
  checkpoints.close()
  assert state is not None, f"{workdir}: no best checkpoint"
  evaluated = data.splits[split]
  variables = state.variables
  img = jax.jit(model.encode_images)(variables, evaluated.images, evaluated.image_mask)
  txt = jax.jit(model.encode_captions)(variables, evaluated.tokens, evaluated.lengths)
  img, txt = np.asarray(img, np.float64), np.asarray(txt, np.float64)
  return img @ txt.T, np.asarray(evaluated.caption_image), int(state.step)


def best_positive_ranks(sim: np.ndarray, caption_image: np.ndarray):
  """0-based ranks ``(i2t [N_img], t2i [N_cap])``: for each image, the position of its first
  own caption in the captions sorted by descending score; for each caption, the position of
  its image (ties: lower index first, ``argsort(-s, kind="stable")``)."""
  sim = np.asarray(sim, np.float64)
  owner = np.asarray(caption_image)
  i2t = np.empty(sim.shape[0], np.int64)
  for i, row in enumerate(sim):
    order = np.argsort(-row, kind="stable")
    i2t[i] = np.flatnonzero(owner[order] == i)[0]
  t2i = np.empty(sim.shape[1], np.int64)
  for j, column in enumerate(sim.T):
    order = np.argsort(-column, kind="stable")
    t2i[j] = np.flatnonzero(order == owner[j])[0]
  return i2t, t2i


def recall_metrics(sim: np.ndarray, caption_image: np.ndarray, ks=(1, 5, 10)) -> dict:
  """``full/{i2t,t2i}/R@K`` (percent), ``full/{i2t,t2i}/{medr,meanr}`` (1-based ranks,
  VSE++'s ``floor(median) + 1``) and ``full/rsum`` (R@1 + R@5 + R@10 of both directions)."""
  out = {}
  for name, ranks in zip(("i2t", "t2i"), best_positive_ranks(sim, caption_image)):
    for k in sorted({*ks, 1, 5, 10}):
      out[f"full/{name}/R@{k}"] = 100.0 * float(np.mean(ranks < k))
    out[f"full/{name}/medr"] = float(np.floor(np.median(ranks)) + 1)
    out[f"full/{name}/meanr"] = float(np.mean(ranks) + 1)
  out["full/rsum"] = sum(out[f"full/{d}/R@{k}"] for d in ("i2t", "t2i") for k in (1, 5, 10))
  return out


def reported_recall_keys(metrics: dict) -> list[str]:
  """The ``full/`` Recall@K, medr and meanr keys of ``metrics`` (and ``full/rsum``)."""
  return sorted(
    k
    for k in metrics
    if k.startswith(("full/i2t/", "full/t2i/"))
    and k.rsplit("/", 1)[1].startswith(("R@", "medr", "meanr"))
  ) + ["full/rsum"]


def recall_ks(keys) -> tuple[int, ...]:
  """The K of the ``.../R@K`` keys."""
  return tuple(sorted({int(k.rsplit("@", 1)[1]) for k in keys if "/R@" in k}))


def assert_test_metrics_of_best_checkpoint(
  metrics: dict, workdir, *, steps: tuple[int, ...], exact: np.ndarray | None = None
) -> int:
  """``metrics`` (a run's metrics.json) is the test split of ``workdir``'s best checkpoint,
  saved at one of ``steps`` (returned): its Recall@K, medr, meanr and RSUM those of
  :func:`recall_metrics` on :func:`tower_similarity`, and every key what
  ``evaluate_retrieval`` gives on that matrix (with ``exact``: the exact relevance, and its
  relevance-1 items as the ``exact`` positives; Recall@K / NDCG@K at K = 1, 5, 10, 20, 50,
  100)."""
  sim, owner, saved_at = tower_similarity(workdir)
  assert saved_at in steps, (saved_at, steps)
  keys = reported_recall_keys(metrics)
  assert {"full/i2t/R@1", "full/t2i/R@10", "full/i2t/medr", "full/t2i/meanr"} <= set(keys)
  reference = recall_metrics(sim, owner, ks=recall_ks(keys))
  for key in keys:
    assert metrics[key] == pytest.approx(reference[key], abs=1e-4), key
  graded = {}
  if exact is not None:
    assert exact.shape == sim.shape, (exact.shape, sim.shape)
    ones = exact >= 1.0
    graded = {
      "relevance": exact,
      "extended_positives": {
        "exact": (
          positives_from_lists([np.flatnonzero(r) for r in ones], num_gallery=ones.shape[1]),
          positives_from_lists([np.flatnonzero(c) for c in ones.T], num_gallery=ones.shape[0]),
        )
      },
    }
  ks = (1, 5, 10, 20, 50, 100)
  options = EvalOptions(curve_ks=ks, ndcg_ks=ks, semantic_ks=())
  expected = evaluate_retrieval(
    sim.astype(np.float32), caption_to_image=owner, options=options, **graded
  )
  assert set(metrics) == set(expected) | {"rsum"}, set(metrics) ^ (set(expected) | {"rsum"})
  assert metrics["rsum"] == metrics["full/rsum"]
  for key, value in expected.items():
    assert metrics[key] == pytest.approx(value, abs=1e-4, nan_ok=True), key
  return saved_at
