"""``jitr-train``: train a dual encoder with any jitr loss on jitr_shapes.

  jitr-train --config=configs/default.py --workdir=/tmp/jitr/default \
      [--config.num_epochs=5] [--config.graded.relevance=oracle]

Wires data (jitr.data), relevance (jitr.relevance TFRecords), models, losses,
training and evaluation; holds no logic of its own beyond that wiring.
"""

from __future__ import annotations

import os

from absl import app, flags, logging
from ml_collections import config_flags

from jitr.apps._cli import workdir_flag

_CONFIG = config_flags.DEFINE_config_file("config", None, "Experiment config file (configs/*.py).")
_WORKDIR = workdir_flag("Directory for checkpoints, logs and results.")
flags.mark_flags_as_required(["config", "workdir"])


def train_and_evaluate(config, workdir: str) -> dict:
  """Trains per ``config`` in ``workdir``; returns the test metrics of the best checkpoint."""
  from jitr import losses, training
  from jitr.apps import wiring
  from jitr.data import pairs
  from jitr.evaluation import report
  from jitr.training import distributed, reporting
  from jitr.training.checkpoints import Checkpoints
  from jitr.training.compile_cache import enable_compilation_cache
  from jitr.training.graded import make_graded_fn
  from jitr.training.loop import StopRequested, fit
  from jitr.training.train_config import check_train_config

  check_train_config(config)
  workdir = os.path.abspath(workdir)
  os.makedirs(workdir, exist_ok=True)
  data_dir = wiring.data_dir(config, workdir)
  if config.get("compilation_cache", True):
    logging.info("compilation cache: %s", enable_compilation_cache(f"{data_dir}/jax_cache"))
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
  reporter = reporting.TrainReporter(
    workdir,
    total_steps=steps_per_epoch * config.num_epochs,
    steps_per_epoch=steps_per_epoch,
    every_steps=config.log_every_steps,
  )
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
      evaluate=reporter.timed_fn("eval", lambda s: evaluate("val", wiring.variables_of(s))),
      on_step=reporter.on_step,
      on_epoch=reporter.on_epoch,
      stop=stop,
      prefetch=config.get("prefetch", 2),
    )
  reporter.close()
  if not finished:
    logging.warning(
      "stopped at step %d (SIGTERM); the latest checkpoint is saved, run again to resume",
      int(state.step),
    )
    checkpoints.close()
    return {}
  best = checkpoints.restore(state, which="best") or state
  checkpoints.close()
  test = evaluate("test", wiring.variables_of(best))
  report.write_json_atomic(os.path.join(workdir, "metrics.json"), test)
  table = reporting.results_table(
    test,
    f"Test split, best checkpoint (step {int(best.step)})"
    + (", exact relevance:" if exact is not None else ":"),
  )
  report.write_text_atomic(os.path.join(workdir, "results.md"), table)
  print(table)
  return test


def main(argv) -> None:
  if len(argv) > 1:
    raise app.UsageError(f"unexpected arguments: {argv[1:]}")
  from jitr.training import distributed, reporting

  reporting.quiet_library_info_logs()
  config = _CONFIG.value
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
