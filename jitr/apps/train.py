"""``jitr-train``: train a retrieval model (``config.model.name``) with any jitr loss.

  jitr-train --config=configs/default.py --workdir=/tmp/jitr/default \
      [--config.num_epochs=5] [--config.graded.relevance=oracle]

Exit status: 0 done; 1 bad input or a fault (one line ``jitr-train: error: ...``);
75 (EX_TEMPFAIL) stopped by SIGTERM after saving: run the same command again to resume.

Wires data (jitr.data), relevance (jitr.relevance TFRecords), models, losses,
training and evaluation; holds no logic of its own beyond that wiring.
"""

from __future__ import annotations

import os
import sys

from absl import app, flags, logging
from ml_collections import config_flags

from jitr.apps._cli import run_reporting_bad_input, workdir_flag

# Exit status of a run stopped by SIGTERM after saving its latest checkpoint: EX_TEMPFAIL
# (sysexits.h: "temporary failure, retry"), so a scheduler requeues it; a re-run resumes.
PREEMPTED_EXIT_STATUS = 75

_CONFIG = config_flags.DEFINE_config_file("config", None, "Experiment config file (configs/*.py).")
_WORKDIR = workdir_flag("Directory for checkpoints, logs and results.")
flags.mark_flags_as_required(["config", "workdir"])


def train_and_evaluate(config, workdir: str) -> dict:
  """Trains per ``config`` in ``workdir``; returns the test metrics of the best checkpoint."""
  import ml_collections

  from jitr import losses, training
  from jitr.apps import run_checks, wiring
  from jitr.apps.teacher_relevance import with_absolute_teachers
  from jitr.data import pairs
  from jitr.evaluation import report
  from jitr.training import distributed, reporting
  from jitr.training.checkpoints import Checkpoints
  from jitr.training.compile_cache import enable_compilation_cache
  from jitr.training.graded import make_graded_fn
  from jitr.training.loop import StopRequested, fit
  from jitr.training.train_config import check_train_config

  check_train_config(config)
  # Teacher workdirs made absolute, so config.json names them from any directory (the
  # caller's config stays as it was).
  config = config.copy_and_resolve_references()
  config.graded = ml_collections.ConfigDict(with_absolute_teachers(dict(config.graded)))
  workdir = os.path.abspath(workdir)
  run_checks.check_workdir(config, workdir)  # before anything is written
  data_dir = wiring.data_dir(config, workdir)
  if config.get("compilation_cache", True):
    logging.info("compilation cache: %s", enable_compilation_cache(f"{data_dir}/jax_cache"))
  splits, vocab, exact, aggregates, folds = wiring.load_data(config, data_dir)

  steps_per_epoch = pairs.steps_per_epoch(splits["train"], config.batch_size)
  model, state = wiring.initial_state(config, len(vocab), splits["train"], steps_per_epoch)
  parallel = training.DataParallel(
    training.make_train_step(
      losses.objective(
        config.loss, steps_per_epoch=steps_per_epoch, calibration=config.get("calibration")
      ),
      model=model,
      graded_fn=make_graded_fn(config.graded, aggregates=aggregates),
    ),
    backend=config.backend,
  )
  if config.batch_size % parallel.num_devices:
    raise ValueError(
      f"config.batch_size={config.batch_size} does not split over {parallel.num_devices} devices"
    )
  # Every check passed: only now is the workdir written (config.json once, never rewritten).
  os.makedirs(workdir, exist_ok=True)
  run_checks.write_config_once(config, workdir)
  vocab.save(os.path.join(workdir, "vocab.json"))

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
      evaluate=reporter.timed_fn("eval", lambda s: evaluate("val", s.variables)),
      on_step=reporter.on_step,
      on_epoch=reporter.on_epoch,
      stop=stop,
      prefetch=config.get("prefetch", 2),
      check_finite_every=config.log_every_steps,  # and before every save
    )
  reporter.close()
  if not finished:
    logging.warning(
      "stopped at step %d (SIGTERM); the latest checkpoint is saved, run again to resume",
      int(state.step),
    )
    checkpoints.close()
    return {}  # main exits with PREEMPTED_EXIT_STATUS
  best = checkpoints.restore(state, which="best") or state
  checkpoints.close()
  test = evaluate("test", best.variables)
  report.write_json_atomic(os.path.join(workdir, "metrics.json"), test)
  table = reporting.results_table(
    test,
    f"Test split, best checkpoint (step {int(best.step)})"
    + (", exact relevance:" if exact is not None else ":"),
  )
  report.write_text_atomic(os.path.join(workdir, "results.md"), table)
  print(table)
  return test


def loaded_config():
  """``--config``'s ConfigDict; a file that does not load is one ``ValueError`` line
  (ml_collections' message spans several lines; its last names the cause)."""
  config = _CONFIG.value
  try:  # a file that failed to load leaves a placeholder that raises on first use
    config.get("seed")
    return config
  except Exception as err:
    cause = [line.strip() for line in str(err).splitlines() if line.strip()]
    given = [a for a in sys.argv[1:] if a.startswith("--config=")]
    raise ValueError(
      f"{given[-1] if given else '--config'}: could not load the config file: "
      f"{cause[-1] if cause else type(err).__name__}"
    ) from None


def main(argv) -> None:
  if len(argv) > 1:
    raise app.UsageError(f"unexpected arguments: {argv[1:]}")
  from jitr.training import distributed, reporting

  reporting.quiet_library_info_logs()
  config = loaded_config()
  distributed.initialize(
    config.distributed.coordinator_address or None,
    config.distributed.num_processes,
    config.distributed.process_id,
  )
  if not train_and_evaluate(config, _WORKDIR.value):
    raise SystemExit(PREEMPTED_EXIT_STATUS)


def run() -> None:
  from jitr.apps.run_checks import parse_flags_reporting_unknown_fields

  app.run(
    lambda argv: run_reporting_bad_input("jitr-train", lambda: main(argv)),
    flags_parser=parse_flags_reporting_unknown_fields("jitr-train"),
  )


if __name__ == "__main__":
  run()
