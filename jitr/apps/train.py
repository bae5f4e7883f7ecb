"""``jitr-train``: train a retrieval model (``config.model.name``) with any jitr loss.

  jitr-train --config=configs/default.py --workdir=/tmp/jitr/default \\
      [--config.num_epochs=5] [--config.graded.relevance=oracle]

Exit status: 0 done; 1 bad input or a fault (one line ``jitr-train: error: ...``);
75 (EX_TEMPFAIL) stopped by SIGTERM after saving; 130 (128 + SIGINT, as the shells report
a command stopped by Ctrl-C) stopped by Ctrl-C after saving, or by a Ctrl-C before training
started or a second one during that save (then the previous checkpoint is the latest). A
stopped run prints one line saying so; the same command resumes it. Flag parsing, then
:func:`jitr.experiment.train_and_evaluate`.
"""

from __future__ import annotations

import sys

from absl import flags
from ml_collections import config_flags

from jitr.apps._cli import (
  App,
  ending_on_a_lost_process,
  join_configured_job,
  loaded_config,
  workdir_flag,
)
from jitr.apps.stopped_runs import PREEMPTED_EXIT_STATUS, stopped_exit

__all__ = ["PREEMPTED_EXIT_STATUS", "main", "run", "stopped_exit"]

# What a Ctrl-C outside the loop's own handling says: before training started, or a second
# one that abandoned the save of the first (a step without its manifest is never restored).
INTERRUPTED_LINE = (
  "interrupted (Ctrl-C) before the current state was saved; run the same command to resume "
  "from the latest saved checkpoint (or to start again when none was saved)"
)

_CONFIG = config_flags.DEFINE_config_file("config", None, "Experiment config file (configs/*.py).")
_WORKDIR = workdir_flag("Directory for checkpoints, logs and results: a folder or a gs:// URL.")
_ALLOW_CHANGED_INPUTS = flags.DEFINE_bool(
  "allow_changed_inputs",
  False,
  "Resume (or fine-tune from --config.init_from) although a file the run pinned in "
  "inputs.json changed (features, captions, vocabulary, concept files, BERT folder); "
  "inputs.json records the change.",
)
_INPUT_SHA256 = flags.DEFINE_multi_string(
  "input_sha256",
  [],
  "FILE=SHA256: the published SHA-256 of a file the run reads (a BERT folder's weights, "
  "concept files jitr does not know), checked before anything is written and recorded in "
  "inputs.json; repeat the flag for more files.",
)
APP = App("jitr-train", __name__, requires=("config", "workdir"), interrupted=INTERRUPTED_LINE)


def main() -> None:
  """Trains the config of ``--config`` in ``--workdir``; a stopped run exits
  :func:`stopped_exit`'s status with its line."""
  config = loaded_config(_CONFIG)  # a file that did not load: before the imports
  # Imported here, not at the top: `jitr-train --help` answers without loading JAX.
  from jitr.experiment import train_and_evaluate
  from jitr.experiment.run_config import check_train_config
  from jitr.training import reporting

  reporting.quiet_library_info_logs()
  check_train_config(config)  # a missing field is one line, before the job is joined
  job = join_configured_job(config.distributed)
  with ending_on_a_lost_process(APP.name, job.process_count):
    result = train_and_evaluate(
      config,
      _WORKDIR.value,
      allow_changed_inputs=_ALLOW_CHANGED_INPUTS.value,
      input_sha256=_INPUT_SHA256.value,
    )
  if not result.finished:
    status, line = stopped_exit(result.stop_signal, result.step)
    sys.stderr.write(f"{APP.name}: {line}\n")
    raise SystemExit(status)


def run() -> None:
  """Console-script entry point."""
  APP.run(main)


if __name__ == "__main__":
  run()
