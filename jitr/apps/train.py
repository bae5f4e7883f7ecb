"""``jitr-train``: train a dual encoder with any jitr loss on jitr_shapes.

  jitr-train --config=configs/default.py --workdir=/tmp/jitr/default \
      [--config.num_epochs=5] [--config.graded.relevance=oracle]

Wires data (jitr.data), relevance (jitr.relevance TFRecords), models, losses,
training and evaluation; holds no logic of its own beyond that wiring.
"""

from __future__ import annotations

import os
import time

from absl import app, flags, logging
from ml_collections import config_flags

from jitr.apps._cli import workdir_flag

_CONFIG = config_flags.DEFINE_config_file("config", None, "Experiment config file (configs/*.py).")
_WORKDIR = workdir_flag("Directory for checkpoints, logs and results.")
flags.mark_flags_as_required(["config", "workdir"])

RESULT_KEYS = [
  ("full/i2t/R@1", "i2t R@1"),
  ("full/i2t/R@5", "i2t R@5"),
  ("full/i2t/R@10", "i2t R@10"),
  ("full/t2i/R@1", "t2i R@1"),
  ("full/t2i/R@5", "t2i R@5"),
  ("full/t2i/R@10", "t2i R@10"),
  ("full/rsum", "RSUM"),
  ("ndcg/i2t/NDCG@10", "i2t NDCG@10"),
  ("ndcg/t2i/NDCG@10", "t2i NDCG@10"),
  ("exact/i2t/mAP@R", "i2t mAP@R"),
  ("exact/t2i/mAP@R", "t2i mAP@R"),
]


def _check_config(config) -> None:
  if config.dataset not in ("jitr_shapes", "f30k_precomp", "coco_precomp"):
    raise ValueError(
      f"config.dataset: expected 'jitr_shapes', 'f30k_precomp' or 'coco_precomp', "
      f"got {config.dataset!r}"
    )
  if config.dataset != "jitr_shapes" and not config.precomp_root:
    raise ValueError(
      f"config.precomp_root: the folder holding {config.dataset}/ is required for {config.dataset}"
    )
  if "oracle" in dict(config.graded).values() and config.dataset != "jitr_shapes":
    raise ValueError("config.graded: 'oracle' relevance exists only for jitr_shapes")
  from jitr.training.graded import parse_source

  for name, source in dict(config.graded).items():
    try:
      parse_source(source)
    except ValueError as err:
      raise ValueError(f"config.graded.{name}: {err}") from None
  if config.batch_size <= 0 or config.num_epochs <= 0:
    raise ValueError("config.batch_size and config.num_epochs must be positive")


def _results_table(metrics: dict, title: str) -> str:
  head = "| " + " | ".join(name for _, name in RESULT_KEYS) + " |"
  rule = "|" + "---|" * len(RESULT_KEYS)
  row = "| " + " | ".join(f"{metrics.get(key, float('nan')):.2f}" for key, _ in RESULT_KEYS) + " |"
  return f"{title}\n\n{head}\n{rule}\n{row}\n"


def train_and_evaluate(config, workdir: str) -> dict:
  """Trains per ``config`` in ``workdir``; returns the test metrics of the best checkpoint."""
  import jax

  from jitr import losses, training
  from jitr.apps import wiring
  from jitr.data import pairs
  from jitr.evaluation import report
  from jitr.training import distributed
  from jitr.training.checkpoints import Checkpoints
  from jitr.training.graded import make_graded_fn
  from jitr.training.loop import StopRequested, fit

  _check_config(config)
  workdir = os.path.abspath(workdir)
  os.makedirs(workdir, exist_ok=True)
  data_dir = wiring.data_dir(config, workdir)
  splits, vocab, exact, aggregates, folds = wiring.load_data(config, data_dir)
  vocab.save(os.path.join(workdir, "vocab.json"))
  report.write_text_atomic(
    os.path.join(workdir, "config.json"), config.to_json_best_effort(indent=2)
  )

  steps_per_epoch = pairs.steps_per_epoch(splits["train"], config.batch_size)
  model, state = wiring.initial_state(config, len(vocab), splits["train"], steps_per_epoch)
  parallel = training.DataParallel(
    training.make_train_step(
      losses.objective(config.loss, steps_per_epoch=steps_per_epoch),
      graded_fn=make_graded_fn(config.graded, aggregates=aggregates),
    ),
    backend=config.backend,
  )
  if config.batch_size % parallel.num_devices:
    raise ValueError(
      f"config.batch_size={config.batch_size} does not split over {parallel.num_devices} devices"
    )

  evaluate = wiring.Evaluator(model, splits, exact, folds, batch_size=config.eval_batch_size)

  summary = _summary_writer(workdir)
  started = time.time()

  def on_step(step, metrics):
    if step % config.log_every_steps == 0 or step == steps_per_epoch * config.num_epochs:
      values = {k: float(v) for k, v in jax.device_get(metrics).items()}
      rate = step / max(time.time() - started, 1e-9)
      eta = (steps_per_epoch * config.num_epochs - step) / max(rate, 1e-9)
      logging.info(
        "step %d/%d  %s  (%.1f steps/s, ETA %.0f s)",
        step,
        steps_per_epoch * config.num_epochs,
        "  ".join(f"{k}={v:.4f}" for k, v in sorted(values.items())),
        rate,
        eta,
      )
      for k, v in values.items():
        summary.scalar(f"train/{k}", v, step)

  def on_epoch(epoch, metrics):
    logging.info(
      "epoch %d: val RSUM %.2f  NDCG@10 i2t %.3f t2i %.3f",
      epoch + 1,
      metrics["rsum"],
      metrics.get("ndcg/i2t/NDCG@10", float("nan")),
      metrics.get("ndcg/t2i/NDCG@10", float("nan")),
    )
    for k, v in metrics.items():
      summary.scalar(f"val/{k}", v, (epoch + 1) * steps_per_epoch)
    summary.flush()

  rows = distributed.process_batch_slice(config.batch_size)  # this host's rows of each global batch
  checkpoints = Checkpoints(workdir)
  with StopRequested() as stop:
    state, finished = fit(
      state,
      parallel=parallel,
      epoch_batches=lambda e: pairs.epoch_batches(
        splits["train"], batch_size=config.batch_size, seed=config.seed, epoch=e, rows=rows
      ),
      steps_per_epoch=steps_per_epoch,
      num_epochs=config.num_epochs,
      checkpoints=checkpoints,
      evaluate=lambda s: evaluate("val", s.params),
      on_step=on_step,
      on_epoch=on_epoch,
      stop=stop,
    )
  if not finished:
    logging.warning(
      "stopped at step %d (SIGTERM); the latest checkpoint is saved, run again to resume",
      int(state.step),
    )
    checkpoints.close()
    return {}
  best = checkpoints.restore(state, which="best") or state
  checkpoints.close()
  test = evaluate("test", best.params)
  report.write_json_atomic(os.path.join(workdir, "metrics.json"), test)
  table = _results_table(
    test,
    f"Test split, best checkpoint (step {int(best.step)})"
    + (", exact relevance:" if exact is not None else ":"),
  )
  report.write_text_atomic(os.path.join(workdir, "results.md"), table)
  print(table)
  return test


class _summary_writer:
  """TensorBoard event files in ``workdir/tensorboard`` (``tf.summary``; TF kept off GPUs)."""

  def __init__(self, workdir: str):
    from jitr.tf_cpu import import_tf

    tf = import_tf()
    self._tf = tf
    self._writer = tf.summary.create_file_writer(os.path.join(workdir, "tensorboard"))

  def scalar(self, name, value, step):
    with self._writer.as_default():
      self._tf.summary.scalar(name, float(value), step=int(step))

  def flush(self):
    self._writer.flush()


class _QuietLibraries:
  """Drops INFO records of orbax and TFDS, which log every file they touch."""

  def filter(self, record) -> bool:
    path = record.pathname.replace(os.sep, "/")
    return record.levelno >= 30 or not ("/orbax/" in path or "/tensorflow_datasets/" in path)


def main(argv) -> None:
  if len(argv) > 1:
    raise app.UsageError(f"unexpected arguments: {argv[1:]}")
  logging.get_absl_handler().addFilter(_QuietLibraries())
  config = _CONFIG.value
  from jitr.training import distributed

  distributed.initialize(
    config.distributed.coordinator_address or None,
    config.distributed.num_processes,
    config.distributed.process_id,
  )
  train_and_evaluate(config, _WORKDIR.value)


def run() -> None:
  app.run(main)


if __name__ == "__main__":
  run()
