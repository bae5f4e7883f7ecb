"""``evaluate_workdir``: score a trained workdir's checkpoint on a split and write the report.

Reads ``config.json`` and the orbax checkpoint that training left in the workdir,
scores every image against every caption of the split (each item encoded once, pairs
scored in blocks: :class:`jitr.training.score_split.SplitScorer`, for dual encoders and
similarity models alike), computes the full metric set
(:func:`jitr.evaluation.evaluate_retrieval`) and writes into ``<workdir>/eval_<split>/``:
``metrics.json``, ``metrics.md``, recall and NDCG curves over K (PNG) and, where the
dataset has exact relevance, ``queries.png``: a few image and caption queries with their
top-5 retrieved items and each item's exact relevance.

An ensemble (more workdirs) scores the mean of the similarity matrices of every member
(:func:`jitr.evaluation.mean_similarity`; SGRAF = an SGR and an SAF workdir, VSRN's
published numbers = two VSRN workdirs), each restored from its own config, vocabulary
and checkpoint. Members whose dataset, split sizes or caption order (the owner image of
every caption) differ from the first are refused with one line before anything is
written. The report goes to ``<workdir>/eval_<split>_ensemble/``; its ``metrics.json``
lists the ``members`` (workdir and step).

The checkpoint evaluated is that one or none: a step that does not match its manifest is
refused with one line naming the damaged file (never replaced by an older step), and so
is a similarity matrix with a NaN / infinite score (the count and the checkpoint);
nothing is written then.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from typing import Any

import jax
import numpy as np
from absl import logging

from jitr import fileio, paths
from jitr.data.wordpiece_vocab import check_same_wordpiece
from jitr.evaluation import mean_similarity, official, report
from jitr.evaluation.eccv_caption_sets import NAME as ECCV
from jitr.evaluation.eccv_caption_sets import eccv_positives
from jitr.evaluation.plots import QueryExample, plot_query_panel
from jitr.experiment import workdir as workdir_lib
from jitr.experiment.evaluator import Evaluator
from jitr.experiment.finite_scores import refuse_nonfinite_scores
from jitr.experiment.loaded_data import LoadedData, load_data
from jitr.experiment.model_state import initial_state, template_steps
from jitr.experiment.pinned_inputs import (
  changes_json,
  pinned_split_difference,
  unverified_note,
  verify_inputs,
)
from jitr.experiment.run_concepts import dataset_constants
from jitr.experiment.run_config import check_storage
from jitr.experiment.semantic_scores import SemanticSource, semantic_scores
from jitr.progress import on_terminal, say
from jitr.training.checkpoints import Checkpoints


def query_panel(
  evaluator, split: str, sim, data_dir: str, config, path: str, num_queries: int
) -> None:
  """Top-5 retrieved items of the first queries of each direction, with exact relevance."""
  from jitr.data.shapes import tfds as shapes_tfds

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
  """One workdir: its absolute path, saved config, data folder and data, the changes of
  its pinned inputs that the evaluation was allowed to take and its inputs as verified
  (``{role: Fingerprint}``, :mod:`!jitr.experiment.pinned_inputs`)."""

  workdir: str
  config: Any
  data_dir: str
  data: LoadedData
  changes: list = dataclasses.field(default_factory=list)
  inputs: dict = dataclasses.field(default_factory=dict)


def require_checkpoint(workdir: str, checkpoint: str) -> None:
  """Raises ``FileNotFoundError`` naming ``workdir/checkpoints/<checkpoint>`` when it holds
  no saved step (checked before orbax opens it, which would create the folders)."""
  folder = os.path.join(workdir, "checkpoints", checkpoint)
  if not (paths.isdir(folder) and any(n.isdigit() for n in paths.listdir(folder))):
    raise FileNotFoundError(
      f"{folder}: no checkpoint to evaluate (jitr-train saves one at the end of each epoch)"
    )


def load_member(workdir: str, *, allow_changed_inputs: bool = False) -> Member:
  """``workdir``'s ``config.json`` (checked as a training config) and its data (as
  ``jitr-train`` loaded them: a WordPiece vocabulary from ``config.text.pretrained``, refused
  in one line when its ``vocab.txt`` is no longer the one ``vocab.json`` records), after
  its pinned inputs are verified (a change refused unless ``allow_changed_inputs``; a
  damaged copy of a third-party file jitr knows always); writes nothing into ``workdir``."""
  workdir = paths.absolute(workdir)
  # names the file and the line or field of a damaged config.json
  config = workdir_lib.read_trained_config(workdir)
  if config is None:
    raise FileNotFoundError(
      f"{os.path.join(workdir, workdir_lib.CONFIG_NAME)}: no config.json; "
      f"is {workdir!r} a jitr-train workdir?"
    )
  data_dir = workdir_lib.data_dir(config, workdir)
  check_storage(config, workdir, data_dir)  # a URL that cannot be reached: one line, first
  say_first(f"checking the inputs of {workdir}")
  inputs, changes = verify_inputs(config, workdir, allow_changed=allow_changed_inputs)
  say_first(f"loading the data of {workdir}")
  data = load_data(config, data_dir, teachers=False)
  check_same_wordpiece(data.vocab, os.path.join(workdir, "vocab.json"))
  return Member(workdir, config, data_dir, data, changes, inputs)


def say_first(text: str) -> None:
  """One line on stderr saying what the evaluation does now (process 0, on a terminal)."""
  say(text, enabled=jax.process_index() == 0 and on_terminal())


def split_mismatch(first: Member, other: Member, split: str) -> str | None:
  """Why ``other``'s ``split`` is not ``first``'s (dataset, image / caption counts, caption
  order: the owner image of every caption), or ``None`` when they are the same."""
  if first.config.dataset != other.config.dataset:
    return f"dataset {other.config.dataset!r} != {first.config.dataset!r}"
  differs = pinned_split_difference(first.workdir, other.workdir, first.config, split)
  if differs is not None:
    return differs
  a, b = first.data.splits[split], other.data.splits[split]
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
  config, train = member.config, member.data.splits["train"]
  steps = template_steps(train, config.batch_size)
  constants = dataset_constants(member.data.concepts)
  vocab_size = len(member.data.vocab)
  model, like = initial_state(config, vocab_size, train, steps, constants, shapes_only=True)
  checkpoints = Checkpoints(member.workdir)
  try:  # that checkpoint or none: a damaged one is refused, not replaced by an older one
    state = checkpoints.restore(like, which=checkpoint, fallback=False)
  finally:
    checkpoints.close()
  if state is None:
    raise FileNotFoundError(f"{member.workdir}/checkpoints/{checkpoint}: no checkpoint to evaluate")
  return model, state


def scored_checkpoints(
  members: Sequence[Member], steps: Sequence[int], sims: Sequence[np.ndarray], checkpoint: str
) -> str:
  """The step folders of the members whose similarity matrix holds a NaN / infinite
  score (all of them when none does alone), comma-separated."""
  folders = [
    os.path.join(m.workdir, "checkpoints", checkpoint, str(s)) for m, s in zip(members, steps)
  ]
  bad = [f for f, sim in zip(folders, sims) if not np.all(np.isfinite(sim))]
  return ", ".join(bad or folders)


PROTOCOLS = ("jitr", "official")


def official_metrics(sim: np.ndarray, caption_image: np.ndarray, folds: int | None) -> dict:
  """The official protocol's metrics of ``sim``: ``full/...`` on the whole split and, for
  COCO's five folds, ``folds/...`` (their means) and ``fold{f}/...``."""
  per_image = len(caption_image) // max(sim.shape[0], 1)
  if per_image < 1 or not np.array_equal(caption_image, np.arange(len(caption_image)) // per_image):
    raise ValueError(
      "protocol official: expected the same number of captions per image, in image order "
      "(caption j of image j // K), as the official evaluation.py assumes"
    )
  metrics = {f"full/{k}": v for k, v in official.official_recall(sim, per_image).items()}
  if folds == 5:
    for key, value in official.official_fold5_recall(sim).items():
      metrics[key if key.startswith("fold") else f"folds/{key}"] = value
  return metrics


def write_official(members, split: str, checkpoint: str, steps, sims, ensemble) -> dict:
  """Scores the members' mean similarity (float64) with the official protocol and writes
  ``eval_<split>[_ensemble]_official/`` (process 0)."""
  first = members[0]
  sim = np.mean(np.stack([np.asarray(s, np.float64) for s in sims]), axis=0)
  refuse_nonfinite_scores(
    {"nonfinite_scores": float(np.count_nonzero(~np.isfinite(sim)))},
    f"checkpoint {scored_checkpoints(members, steps, sims, checkpoint)} on the {split} split",
  )
  caption_image = np.asarray(first.data.splits[split].caption_image)
  metrics = official_metrics(sim, caption_image, first.config.eval_folds or None)
  if jax.process_index() > 0:
    return metrics
  suffix = "_ensemble_official" if ensemble else "_official"
  out = os.path.join(first.workdir, f"eval_{split}{suffix}")
  what = (
    f"ensemble of {len(members)} {checkpoint} checkpoints"
    if ensemble
    else (f"{checkpoint} checkpoint (step {steps[0]})")
  )
  title = f"{first.config.dataset} {split}, {what}, official protocol"
  with report.building(out) as folder:  # the whole report or the previous one
    report_files = report.write_report(folder, metrics, title=title, plots=False)
    record_changed_inputs(report_files["json"], members)
  logging.info("wrote %s", out)
  return metrics


def record_changed_inputs(metrics_json: str, members) -> None:
  """Adds the members' allowed input changes to the report's ``metrics.json``
  (``changed_inputs``); nothing when there are none."""
  changes = [c for m in members for c in changes_json(m.workdir, m.changes)]
  if not changes:
    return
  written = fileio.read_json(metrics_json)
  written["changed_inputs"] = changes
  fileio.write_json_atomic(metrics_json, written, indent=2, sort_keys=True, allow_nan=False)


@dataclasses.dataclass(frozen=True)
class ExtraMetrics:
  """Metrics an evaluation adds beside Recall@K (jitr-eval's ``--semantic`` and ``--eccv``;
  jitr's protocol only)."""

  semantic: SemanticSource = SemanticSource()
  """SAM's NCS@K and Semantic Recall@K against these scores (``spec`` ``""``: none)."""
  eccv: bool = False
  """ECCV Caption's mAP@R, R-P and R@K on COCO's 5K test split."""


def evaluate_workdir(
  workdir: str,
  *,
  split: str = "test",
  checkpoint: str = "best",
  num_queries: int = 4,
  ensemble: Sequence[str] = (),
  protocol: str = "jitr",
  allow_changed_inputs: bool = False,
  extra: ExtraMetrics = ExtraMetrics(),
) -> dict:
  """Evaluates ``workdir``'s checkpoint on ``split``; returns the metrics and writes the report.

  Every member's pinned inputs are verified first (:mod:`!jitr.experiment.pinned_inputs`);
  ``allow_changed_inputs`` takes changed ones, and the report's ``metrics.json`` lists
  them (``changed_inputs``); the third-party files that nothing verified are named in one
  warning.

  With ``ensemble`` workdirs, scores the mean of every member's similarity matrix (each
  restored from its own config, vocabulary and checkpoint) and writes the report to
  ``<workdir>/eval_<split>_ensemble/`` (``metrics.json`` lists the ``members``). Members
  whose ``split`` differs from ``workdir``'s are refused before anything is written.
  ``num_queries`` image and caption queries go into ``queries.png`` (jitr_shapes only);
  0 writes no panel. The report folder is written whole or not at all
  (:func:`!jitr.evaluation.report.building`): a failed or interrupted write leaves the
  previous report as it was. ``protocol="official"``
  scores Recall@K as the official ``evaluation.py`` does, ties included
  (:func:`jitr.evaluation.official_recall`; the members' mean in float64, as the official SGRAF
  ensemble), into ``eval_<split>[_ensemble]_official/``. ``extra.semantic``
  (:class:`~jitr.experiment.SemanticSource`, ``spec="topk:NAME"``) adds SAM's
  NCS@K and Semantic Recall@K against the top-K scores of relevance records of ``split``
  (:mod:`!jitr.experiment.semantic_scores`; ``semantic.records``: the records' folder, else
  computed under the data folder). ``extra.eccv`` adds ECCV Caption's positives of COCO's
  5K test split (:mod:`!jitr.evaluation.eccv_caption_sets`): ``eccv/{i2t,t2i}/mAP@R``,
  ``R-P`` and ``R@K``.
  """
  if protocol not in PROTOCOLS:
    raise ValueError(f"protocol: expected one of {PROTOCOLS}, got {protocol!r}")
  semantic, eccv = extra.semantic, extra.eccv
  if semantic and protocol != "jitr":
    raise ValueError("semantic scores: the official protocol reports Recall@K only")
  if eccv and protocol != "jitr":
    raise ValueError("ECCV Caption: the official protocol reports Recall@K only")
  if isinstance(num_queries, bool) or not isinstance(num_queries, int) or num_queries < 0:
    raise ValueError(f"num_queries: expected a whole number >= 0, got {num_queries!r}")
  members = [
    load_member(w, allow_changed_inputs=allow_changed_inputs) for w in (workdir, *ensemble)
  ]
  note = unverified_note(*(m.inputs for m in members))
  if note and jax.process_index() == 0:
    logging.warning("%s", note)
  first = members[0]
  for other in members[1:]:
    reason = split_mismatch(first, other, split)
    if reason is not None:
      raise ValueError(f"--ensemble: {other.workdir} does not match {first.workdir}: {reason}")
  for member in members:
    require_checkpoint(member.workdir, checkpoint)
  extended = None
  if eccv:  # the split's layout checked before anything is scored
    extended = {ECCV: eccv_positives(first.data.splits[split].caption_image)}
  phi = None
  if semantic:
    say_first(f"reading the {semantic.spec} scores of the {split} split")
    phi = semantic_scores(
      semantic.spec, first.config, first.data_dir, split, records=semantic.records, progress=True
    )
  sims, steps = [], []
  for member in members:
    say_first(f"restoring the {checkpoint} checkpoint of {member.workdir}")
    model, state = restore_member(member, checkpoint)
    data = member.data
    say_first(f"scoring the {split} split")
    evaluator = Evaluator(
      model,
      data.splits,
      data.exact,
      data.folds,
      batch_size=member.config.eval_batch_size,
      show_progress=True,  # a large split: one line on stderr, pairs scored of the total
    )
    sims.append(evaluator.similarity(split, state.variables, official=protocol == "official"))
    steps.append(int(state.step))
    if member is first:
      first_evaluator = evaluator
  if protocol == "official":
    return write_official(members, split, checkpoint, steps, sims, ensemble)
  sim = mean_similarity(sims)
  say_first("computing the metrics")
  metrics = first_evaluator(split, None, sim=sim, semantic=phi, extended=extended)
  scored = scored_checkpoints(members, steps, sims, checkpoint)
  refuse_nonfinite_scores(metrics, f"checkpoint {scored} on the {split} split")
  if jax.process_index() > 0:  # every process of a job computed the same; process 0 writes
    return metrics
  config = first.config
  if ensemble:
    out = os.path.join(first.workdir, f"eval_{split}_ensemble")
    title = f"{config.dataset} {split}, ensemble of {len(members)} {checkpoint} checkpoints"
  else:
    out = os.path.join(first.workdir, f"eval_{split}")
    title = f"{config.dataset} {split}, {checkpoint} checkpoint (step {steps[0]})"
  title += f", semantic scores {semantic.spec}" if semantic.spec else ""
  title += ", ECCV Caption positives" if eccv else ""
  with report.building(out) as folder:  # the whole report or the previous one
    report_files = report.write_report(folder, metrics, title=title)
    if ensemble:
      written = fileio.read_json(report_files["json"])
      written["members"] = [{"workdir": m.workdir, "step": s} for m, s in zip(members, steps)]
      fileio.write_json_atomic(
        report_files["json"], written, indent=2, sort_keys=True, allow_nan=False
      )
    record_changed_inputs(report_files["json"], members)
    if first.data.exact is not None and num_queries > 0:  # else no panel: the folder is new
      panel = os.path.join(folder, "queries.png")
      query_panel(first_evaluator, split, sim, first.data_dir, config, panel, num_queries)
  logging.info("wrote %s", out)
  return metrics
