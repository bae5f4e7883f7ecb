"""``train_and_evaluate(config, workdir)``: one whole training run, as ``jitr-train`` runs it.

Checks the config and the workdir before anything is written, loads the data and the
stored relevance, builds the model, its train state and the data-parallel step of
``config.loss``, trains with validation and checkpoints (:func:`jitr.training.loop.fit`),
and scores the best checkpoint on the test split into ``metrics.json`` and
``results.md``. A validation or test pass with a NaN / infinite similarity score stops
the run with one line instead (nothing saved or written from it). SIGTERM or SIGINT
(Ctrl-C) stops it at a step boundary after saving the latest checkpoint; the same call
resumes.
"""

from __future__ import annotations

import dataclasses
import os
import signal
from collections.abc import Sequence

import jax
import ml_collections
from absl import logging

from jitr import fileio, losses, paths, training
from jitr.data import pairs
from jitr.data.datasets import dataset_info
from jitr.data.token_chunks import check_chunk_split
from jitr.data.train_augment import TrainAugment
from jitr.evaluation import report
from jitr.experiment import workdir as workdir_lib
from jitr.experiment.evaluator import Evaluator
from jitr.experiment.finite_scores import refuse_nonfinite_scores
from jitr.experiment.init_from import check_source, start_from
from jitr.experiment.loaded_data import load_data, say_nothing
from jitr.experiment.model_state import initial_state
from jitr.experiment.pinned_inputs import (
  VOCAB_ROLE,
  check_source_vocab,
  fingerprint,
  given_digests,
  unverified_note,
  verify_inputs,
  write_pins,
)
from jitr.experiment.run_concepts import dataset_constants
from jitr.experiment.run_config import check_storage, check_train_config, resolved_config
from jitr.experiment.vocab_check import check_vocab_coverage
from jitr.training import distributed, reporting
from jitr.training.agreed_stop import AgreedStop
from jitr.training.checkpoints import Checkpoints
from jitr.training.compile_cache import enable_run_compilation_cache
from jitr.training.graded import make_graded_fn
from jitr.training.loop import EpochPlan, LoopHooks, StopRequested, fit
from jitr.training.train_progress import TrainProgress


@dataclasses.dataclass(frozen=True)
class RunResult:
  """What :func:`train_and_evaluate` ends with.

  Attributes:
    finished: whether every epoch ran (``False``: stopped by SIGTERM or SIGINT after
      saving; the same call resumes).
    metrics: the test metrics of the best checkpoint (empty when not finished).
    stop_signal: the signal that stopped an unfinished run (``None`` when finished).
    step: the step saved by an unfinished run (``None`` when finished).
  """

  finished: bool
  metrics: dict
  stop_signal: int | None = None
  step: int | None = None


def validation_metrics(evaluate: Evaluator, state, say=say_nothing) -> dict:
  """The val split's metrics of ``state``; a non-finite score stops the run before the
  state is saved or its metrics logged
  (:class:`~jitr.experiment.finite_scores.NonFiniteScoresError`). ``say`` gets the line
  ``validating step N``."""
  say(f"validating step {int(state.step)}")
  return refuse_nonfinite_scores(
    evaluate("val", state.variables),
    f"validation of step {int(state.step)} on the val split (this state was not saved)",
  )


def train_augment(config, data) -> TrainAugment | None:
  """The augmentation of every training batch (:class:`!jitr.data.train_augment.TrainAugment`):
  ``config.text.word_augment`` per word of the captions, ``config.image.region_drop`` per
  region; ``None`` when both are 0. ``data``: the run's
  :class:`~jitr.experiment.loaded_data.LoadedData`."""
  words, regions = config.text.word_augment, config.image.region_drop
  if not words and not regions:
    return None
  tokenizer = data.vocab.tokenizer if words else None
  return TrainAugment(words, regions, tokenizer, data.train_words, config.max_caption_len)


def data_parallel_step(config, model, aggregates: dict, steps_per_epoch: int):
  """The data-parallel train step (:class:`jitr.training.DataParallel`) of ``config.loss``
  on ``model``, with ``config.graded``'s inputs, as ``jitr-train`` runs it."""
  objective = losses.objective(
    config.loss, steps_per_epoch=steps_per_epoch, calibration=config.calibration
  )
  return training.DataParallel(
    training.make_train_step(
      objective,
      model=model,
      graded_fn=make_graded_fn(config.graded, aggregates=aggregates),
      grad_chunks=config.grad_chunks,
      query_chunks=config.query_chunks,
    ),
    backend=config.backend,
  )


def train_and_evaluate(
  config: ml_collections.ConfigDict,
  workdir: str,
  *,
  allow_changed_inputs: bool = False,
  input_sha256: Sequence[str] = (),
) -> RunResult:
  """Trains per ``config`` in ``workdir`` and evaluates the best checkpoint on the test split.

  A workdir with a ``config.json`` is resumed: ``config`` may differ from it only in how
  the run is executed (:data:`!jitr.experiment.run_config.EXECUTION_FIELDS`) and in
  ``num_epochs``, which may extend the schedule or end it no earlier than the epochs
  already trained; ``config.json`` then records the new ``num_epochs``. The files the run
  reads outside its checkpoints are pinned in ``inputs.json``
  (:mod:`!jitr.experiment.pinned_inputs`): a resume, and the ``config.init_from`` source's
  vocabulary, must still be what was pinned, unless ``allow_changed_inputs`` (the change
  is then recorded in ``inputs.json``). Third-party inputs are verified against the
  published files jitr knows and the ``input_sha256`` entries (``FILE=SHA256``); a damaged
  copy of a known file is refused, and the files nothing verified are named in one
  warning (:func:`!jitr.experiment.pinned_inputs.unverified_note`).

  Raises:
    ValueError: a bad config, a workdir trained with another run's config, a changed
      input or one that is not the published file, or a ``num_epochs`` below the epochs it
      already trained (before anything is written).
  """
  check_train_config(config)
  config = resolved_config(config)
  workdir = paths.absolute(workdir)
  data_dir = workdir_lib.data_dir(config, workdir)
  check_storage(config, workdir, data_dir)  # a URL that cannot be reached: one line, first
  workdir_lib.check_workdir(config, workdir)  # before anything is written
  given = given_digests(input_sha256)
  pins, changed = verify_inputs(config, workdir, allow_changed=allow_changed_inputs, given=given)
  note = unverified_note(pins)
  if note and jax.process_index() == 0:
    logging.warning("%s", note)
  if config.init_from and not workdir_lib.saved_steps(workdir):  # a new run: its source
    check_source(config.init_from)
    check_source_vocab(config.init_from, allow_changed_inputs)
  if config.compilation_cache:
    logging.info("compilation cache: %s", enable_run_compilation_cache(data_dir))
  lines = TrainProgress(total_steps=0)  # what the run does now, on process 0's stderr
  data = load_data(config, data_dir, say=lines.phase if lines.enabled else say_nothing)
  check_vocab_coverage(config.vocab_min_coverage, data.vocab, data.splits["train"])
  # the training images an epoch draws from (all, or SAM's reduced training data)
  train = pairs.training_subset(data.splits["train"], config.train_fraction)

  steps_per_epoch = pairs.steps_per_epoch(train, config.batch_size)
  lines.total_steps = steps_per_epoch * config.num_epochs
  constants = dataset_constants(data.concepts)
  lines.phase("building the model and its train state")
  model, state = initial_state(config, len(data.vocab), train, steps_per_epoch, constants)
  if config.init_from and not workdir_lib.saved_steps(workdir):  # a resume: its own
    lines.phase(f"initializing from {config.init_from}")
    state = start_from(config.init_from, data.vocab, train, state, constants)
  parallel = data_parallel_step(config, model, data.aggregates, steps_per_epoch)
  if config.batch_size % parallel.num_devices:
    raise ValueError(
      f"config.batch_size={config.batch_size} does not split over {parallel.num_devices} devices"
    )
  check_chunk_split(config.batch_size, parallel.num_devices, config.token_chunks)
  # a resume may end no earlier than the epochs its checkpoints reach
  workdir_lib.check_num_epochs(config.num_epochs, workdir, steps_per_epoch)
  # Every check passed: only now is the workdir written (config.json whole when new, its
  # num_epochs when a resume changed it), by process 0 once every process has checked it.
  distributed.all_processes_reach("jitr_workdir_checked")
  if jax.process_index() == 0:
    paths.makedirs(workdir)
    workdir_lib.record_config(config, workdir)
    vocab_path = os.path.join(workdir, "vocab.json")
    data.vocab.save(vocab_path)
    write_pins(workdir, {**pins, VOCAB_ROLE: fingerprint(vocab_path)}, changed)
  distributed.all_processes_reach("jitr_workdir_recorded")

  evaluate = Evaluator(
    model,
    data.splits,
    data.exact,
    data.folds,
    batch_size=config.eval_batch_size,
    show_progress=True,  # a large split: one line on process 0's stderr, pairs scored
  )
  reporter = reporting.TrainReporter(
    workdir,
    total_steps=steps_per_epoch * config.num_epochs,
    steps_per_epoch=steps_per_epoch,
    every_steps=config.log_every_steps,
    work_clock=lines.working_seconds,  # the steps/s of the log leaves out validation too
  )
  rows = distributed.process_batch_slice(config.batch_size)  # this host's rows of each batch
  augment = train_augment(config, data)
  best_metric = dataset_info(config.dataset).best_metric  # RSUM, or class MAP
  # closed on every path, an error's included
  with Checkpoints(workdir, best_metric=best_metric) as checkpoints:
    with StopRequested() as signalled:
      # every process stops at the same step, whichever got the signal
      stop = AgreedStop(signalled, config.distributed.stop_check_every_steps)
      state, finished = fit(
        state,
        parallel=parallel,
        plan=EpochPlan(
          epoch_batches=lambda e: pairs.epoch_batches(
            train,
            batch_size=config.batch_size,
            seed=config.seed,
            epoch=e,
            rows=rows,
            buckets=tuple(config.token_buckets),
            chunking=pairs.TokenChunking(config.token_chunks, shards=parallel.num_devices),
            augment=augment,
          ),
          steps_per_epoch=steps_per_epoch,
          num_epochs=config.num_epochs,
          eval_every_steps=config.eval_every_steps,
        ),
        checkpoints=checkpoints,
        hooks=LoopHooks(
          evaluate=reporter.timed_fn(
            "eval", lambda s: validation_metrics(evaluate, s, lines.phase)
          ),
          on_step=reporter.on_step,
          on_validation=reporter.on_validation,
          on_epoch=reporter.on_epoch,
          stop=stop,
          progress=lines,
        ),
        prefetch=config.prefetch,
        check_finite_every=config.log_every_steps,  # and before every save
      )
    reporter.close()
    if not finished:
      stop_signal = stop.signal_number or signal.SIGTERM
      logging.warning(
        "stopped at step %d (%s); the latest checkpoint is saved, run again to resume",
        int(state.step),
        signal.Signals(stop_signal).name,
      )
      return RunResult(finished=False, metrics={}, stop_signal=stop_signal, step=int(state.step))
    lines.phase("restoring the best checkpoint")
    restored = checkpoints.restore(state, which="best")
  best = restored or state
  scored = (
    f"checkpoint {os.path.join(workdir, 'checkpoints', 'best', str(int(best.step)))}"
    if restored is not None
    else f"the final state (step {int(best.step)})"
  )
  lines.phase(f"scoring the test split with {scored}")
  test = refuse_nonfinite_scores(evaluate("test", best.variables), f"{scored} on the test split")
  table = reporting.results_table(
    test,
    f"Test split, best checkpoint (step {int(best.step)})"
    + (", exact relevance:" if data.exact is not None else ":"),
  )
  if jax.process_index() == 0:  # every process computed the same metrics
    report.write_json_atomic(os.path.join(workdir, "metrics.json"), test)
    fileio.write_text_atomic(os.path.join(workdir, "results.md"), table)
  print(table)
  return RunResult(finished=True, metrics=test)
