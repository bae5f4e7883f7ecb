"""``jitr-eval``: score a trained workdir's checkpoint on a split and write the report.

  jitr-eval --workdir=workdirs/default --split=test [--checkpoint=best|latest]
  jitr-eval --workdir=workdirs/sgr --ensemble=workdirs/saf[,more] --split=test

Reads ``config.json`` and the orbax checkpoint that ``jitr-train`` left in the
workdir, scores every image against every caption of the split (each item
encoded once, pairs scored in blocks: :class:`jitr.training.score_split.SplitScorer`,
for dual encoders and similarity models alike), computes the full metric set
(:func:`jitr.evaluation.evaluate_retrieval`) and writes into
``<workdir>/eval_<split>/``: ``metrics.json``, ``metrics.md``, recall and NDCG
curves over K (PNG) and, for jitr_shapes, ``queries.png``: a few image and
caption queries with their top-5 retrieved items and each item's exact relevance.

``--ensemble`` (comma-separated workdirs) scores the mean of the similarity
matrices of ``--workdir`` and every listed workdir
(:func:`jitr.evaluation.mean_similarity`; SGRAF = an SGR and an SAF workdir,
VSRN's published numbers = two VSRN workdirs), each restored from its own
config, vocabulary and checkpoint. Workdirs whose dataset, split sizes or
caption order (the owner image of every caption) differ from ``--workdir``'s
are refused with one line before anything is written. The report goes to
``<workdir>/eval_<split>_ensemble/`` (the single-model ``eval_<split>/`` is left
alone); its ``metrics.json`` lists the ``members`` (workdir and step).
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Sequence
from typing import Any

from absl import app, flags, logging

from jitr.apps._cli import run_reporting_bad_input, workdir_flag
from jitr.apps.run_checks import CONFIG_NAME, read_workdir_config

_WORKDIR = workdir_flag("A jitr-train workdir (config.json + checkpoints/).")
_SPLIT = flags.DEFINE_enum("split", "test", ["val", "test"], "Split to evaluate.")
_CHECKPOINT = flags.DEFINE_enum(
  "checkpoint", "best", ["best", "latest"], "Which checkpoint to load."
)
_NUM_QUERIES = flags.DEFINE_integer(
  "num_queries", 4, "Queries per direction in the jitr_shapes panel."
)
_ENSEMBLE = flags.DEFINE_list(
  "ensemble",
  [],
  "More jitr-train workdirs (comma-separated): score the mean of all similarity matrices "
  "(SGRAF = SGR + SAF; VSRN's two models) into <workdir>/eval_<split>_ensemble/.",
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


@dataclasses.dataclass
class Member:
  """One workdir's config, data and (once restored) model and state."""

  workdir: str
  config: Any
  data_dir: str
  splits: dict
  vocab: Any
  exact: dict | None
  folds: int | None


def load_member(workdir: str) -> Member:
  """``workdir``'s ``config.json`` and its data (as ``jitr-train`` loaded them); writes
  nothing into ``workdir``."""
  import ml_collections

  from jitr.apps import wiring

  workdir = os.path.abspath(workdir)
  saved = read_workdir_config(workdir)  # names the file and line of a damaged config.json
  if saved is None:
    raise FileNotFoundError(
      f"{os.path.join(workdir, CONFIG_NAME)}: no config.json; is {workdir!r} a jitr-train workdir?"
    )
  config = ml_collections.ConfigDict(saved)
  data_dir = wiring.data_dir(config, workdir)
  splits, vocab, exact, _, folds = wiring.load_data(config, data_dir, teachers=False)
  return Member(workdir, config, data_dir, splits, vocab, exact, folds)


def split_mismatch(first: Member, other: Member, split: str) -> str | None:
  """Why ``other``'s ``split`` is not ``first``'s (dataset, image / caption counts, caption
  order: the owner image of every caption), or ``None`` when they are the same."""
  import numpy as np

  if first.config.dataset != other.config.dataset:
    return f"dataset {other.config.dataset!r} != {first.config.dataset!r}"
  a, b = first.splits[split], other.splits[split]
  for what in ("num_images", "num_captions"):
    if getattr(a, what) != getattr(b, what):
      return f"{split} split {what} {getattr(b, what)} != {getattr(a, what)}"
  if not np.array_equal(a.caption_image, b.caption_image):
    j = int(np.flatnonzero(a.caption_image != b.caption_image)[0])
    return (
      f"{split} split caption order differs: caption {j} belongs to image "
      f"{int(b.caption_image[j])}, not {int(a.caption_image[j])}"
    )
  return None


def restore_member(member: Member, checkpoint: str):
  """``(model, state)``: ``member``'s model and its ``checkpoint`` (``best`` / ``latest``)."""
  from jitr.apps import wiring
  from jitr.data import pairs
  from jitr.training.checkpoints import Checkpoints

  config, train = member.config, member.splits["train"]
  steps = pairs.steps_per_epoch(train, config.batch_size)
  model, like = wiring.initial_state(config, len(member.vocab), train, steps)
  checkpoints = Checkpoints(member.workdir)
  state = checkpoints.restore(like, which=checkpoint)
  checkpoints.close()
  if state is None:
    raise FileNotFoundError(f"{member.workdir}/checkpoints/{checkpoint}: no checkpoint to evaluate")
  return model, state


def evaluate_workdir(
  workdir: str,
  *,
  split: str = "test",
  checkpoint: str = "best",
  num_queries: int = 4,
  ensemble: Sequence[str] = (),
) -> dict:
  """Evaluates ``workdir``'s checkpoint on ``split``; returns the metrics and writes the report.

  With ``ensemble`` workdirs, scores the mean of every member's similarity matrix (each
  restored from its own config, vocabulary and checkpoint) and writes the report to
  ``<workdir>/eval_<split>_ensemble/`` (``metrics.json`` lists the ``members``). Members
  whose ``split`` differs from ``workdir``'s are refused before anything is written.
  """
  from jitr import fileio
  from jitr.apps import wiring
  from jitr.evaluation import mean_similarity, report

  members = [load_member(w) for w in (workdir, *ensemble)]
  first = members[0]
  for other in members[1:]:
    reason = split_mismatch(first, other, split)
    if reason is not None:
      raise ValueError(f"--ensemble: {other.workdir} does not match {first.workdir}: {reason}")
  sims, steps = [], []
  for member in members:
    model, state = restore_member(member, checkpoint)
    evaluator = wiring.Evaluator(
      model, member.splits, member.exact, member.folds, batch_size=member.config.eval_batch_size
    )
    sims.append(evaluator.similarity(split, state.variables))
    steps.append(int(state.step))
    if member is first:
      first_evaluator = evaluator
  sim = mean_similarity(sims)
  metrics = first_evaluator(split, None, sim=sim)
  config = first.config
  if ensemble:
    out = os.path.join(first.workdir, f"eval_{split}_ensemble")
    title = f"{config.dataset} {split}, ensemble of {len(members)} {checkpoint} checkpoints"
  else:
    out = os.path.join(first.workdir, f"eval_{split}")
    title = f"{config.dataset} {split}, {checkpoint} checkpoint (step {steps[0]})"
  paths = report.write_report(out, metrics, title=title)
  if ensemble:
    with open(paths["json"]) as f:
      written = json.load(f)
    written["members"] = [{"workdir": m.workdir, "step": s} for m, s in zip(members, steps)]
    fileio.write_json_atomic(paths["json"], written, indent=2, sort_keys=True, allow_nan=False)
  if first.exact is not None:
    _query_panel(
      first_evaluator,
      split,
      sim,
      first.data_dir,
      config,
      os.path.join(out, "queries.png"),
      num_queries,
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
      ensemble=_ENSEMBLE.value,
    ),
  )


def run() -> None:
  flags.mark_flag_as_required("workdir")
  app.run(main)


if __name__ == "__main__":
  run()
