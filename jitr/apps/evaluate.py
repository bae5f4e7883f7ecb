"""``jitr-eval``: score a trained workdir's checkpoint on a split and write the report.

  jitr-eval --workdir=workdirs/default --split=test [--checkpoint=best|latest]

Reads ``config.json`` and the orbax checkpoint that ``jitr-train`` left in the
workdir, embeds the split with both towers, computes the full metric set
(:func:`jitr.evaluation.evaluate_retrieval`) and writes into
``<workdir>/eval_<split>/``: ``metrics.json``, ``metrics.md``, recall and NDCG
curves over K (PNG) and, for jitr_shapes, ``queries.png``: a few image and
caption queries with their top-5 retrieved items and each item's exact relevance.
"""

from __future__ import annotations

import json
import os

from absl import app, flags, logging

from jitr.apps._cli import run_reporting_bad_input, workdir_flag

_WORKDIR = workdir_flag("A jitr-train workdir (config.json + checkpoints/).")
_SPLIT = flags.DEFINE_enum("split", "test", ["val", "test"], "Split to evaluate.")
_CHECKPOINT = flags.DEFINE_enum(
  "checkpoint", "best", ["best", "latest"], "Which checkpoint to load."
)
_NUM_QUERIES = flags.DEFINE_integer(
  "num_queries", 4, "Queries per direction in the jitr_shapes panel."
)


def _query_panel(
  evaluator, split: str, sim, data_dir: str, config, path: str, num_queries: int
) -> None:
  """Top-5 retrieved items of the first queries of each direction, with exact relevance."""
  import numpy as np

  from jitr.data import shapes_tfds
  from jitr.evaluation.plots import QueryExample, plot_query_panel

  arrays = shapes_tfds.load_split(split, data_dir=data_dir, config=config.shapes_config)
  rel = evaluator.exact[split]
  owner = evaluator.splits[split].caption_image
  examples = []
  for i in range(min(num_queries, sim.shape[0])):
    top = np.argsort(-sim[i], kind="stable")[:5]
    examples.append(
      QueryExample(
        arrays["image"][i],
        [arrays["captions"][j] for j in top],
        rel[i, top],
        positive=owner[top] == i,
        title=f"image {i}",
      )
    )
  for j in range(0, min(num_queries, sim.shape[1]) * 5, 5):
    top = np.argsort(-sim[:, j], kind="stable")[:5]
    examples.append(
      QueryExample(
        arrays["captions"][j],
        [arrays["image"][t] for t in top],
        rel[top, j],
        positive=top == owner[j],
        title=f"caption {j}",
      )
    )
  plot_query_panel(examples, path, title=f"jitr_shapes {split}: top-5 with exact relevance")


def evaluate_workdir(
  workdir: str, *, split: str = "test", checkpoint: str = "best", num_queries: int = 4
) -> dict:
  """Evaluates ``workdir``'s checkpoint on ``split``; returns the metrics and writes the report."""
  import ml_collections

  from jitr.apps import wiring
  from jitr.data import pairs
  from jitr.evaluation import report
  from jitr.training.checkpoints import Checkpoints

  workdir = os.path.abspath(workdir)
  config_path = os.path.join(workdir, "config.json")
  if not os.path.isfile(config_path):
    raise FileNotFoundError(f"{config_path}: no config.json; is {workdir!r} a jitr-train workdir?")
  with open(config_path) as f:
    config = ml_collections.ConfigDict(json.load(f))
  data_dir = wiring.data_dir(config, workdir)
  splits, vocab, exact, _, folds = wiring.load_data(config, data_dir)
  steps = pairs.steps_per_epoch(splits["train"], config.batch_size)
  model, like = wiring.initial_state(config, len(vocab), splits["train"], steps)
  checkpoints = Checkpoints(workdir)
  state = checkpoints.restore(like, which=checkpoint)
  checkpoints.close()
  if state is None:
    raise FileNotFoundError(f"{workdir}/checkpoints/{checkpoint}: no checkpoint to evaluate")
  evaluator = wiring.Evaluator(model, splits, exact, folds, batch_size=config.eval_batch_size)
  sim = evaluator.similarity(split, state.variables)
  metrics = evaluator(split, state.variables, sim=sim)
  out = os.path.join(workdir, f"eval_{split}")
  report.write_report(
    out,
    metrics,
    title=f"{config.dataset} {split}, {checkpoint} checkpoint (step {int(state.step)})",
  )
  if exact is not None:
    _query_panel(
      evaluator, split, sim, data_dir, config, os.path.join(out, "queries.png"), num_queries
    )
  logging.info("wrote %s", out)
  return metrics


def main(argv) -> None:
  if len(argv) > 1:
    raise app.UsageError(f"unexpected arguments: {argv[1:]}")
  flags.mark_flag_as_required("workdir")
  run_reporting_bad_input(
    "jitr-eval",
    lambda: evaluate_workdir(
      _WORKDIR.value,
      split=_SPLIT.value,
      checkpoint=_CHECKPOINT.value,
      num_queries=_NUM_QUERIES.value,
    ),
  )


def run() -> None:
  flags.mark_flag_as_required("workdir")
  app.run(main)


if __name__ == "__main__":
  run()
