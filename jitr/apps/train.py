"""``jitr-train``: train a retrieval model (``config.model.name``) with any jitr loss.

  jitr-train --config=configs/default.py --workdir=/tmp/jitr/default \
      [--config.num_epochs=5] [--config.graded.relevance=oracle]

Exit status: 0 done; 1 bad input or a fault (one line ``jitr-train: error: ...``);
75 (EX_TEMPFAIL) stopped by SIGTERM after saving: run the same command again to resume.
Flag parsing, then :func:`jitr.experiment.train_and_evaluate`.
"""

from __future__ import annotations

from absl import app, flags
from ml_collections import config_flags

from jitr.apps._cli import (
  loaded_config,
  parse_flags_reporting_unknown_fields,
  run_app,
  run_reporting_bad_input,
  workdir_flag,
)

# Exit status of a run stopped by SIGTERM after saving its latest checkpoint: EX_TEMPFAIL
# (sysexits.h: "temporary failure, retry"), so a scheduler requeues it; a re-run resumes.
PREEMPTED_EXIT_STATUS = 75

_CONFIG = config_flags.DEFINE_config_file("config", None, "Experiment config file (configs/*.py).")
_WORKDIR = workdir_flag("Directory for checkpoints, logs and results.")
flags.mark_flags_as_required(["config", "workdir"])


def main(argv: list[str]) -> None:
  if len(argv) > 1:
    raise app.UsageError(f"unexpected arguments: {argv[1:]}")
  # Imported here, not at the top: `jitr-train --help` answers without loading JAX.
  from jitr.experiment import train_and_evaluate
  from jitr.training import distributed, reporting

  reporting.quiet_library_info_logs()
  config = loaded_config(_CONFIG)
  distributed.initialize(
    config.distributed.coordinator_address or None,
    config.distributed.num_processes,
    config.distributed.process_id,
  )
  if not train_and_evaluate(config, _WORKDIR.value).finished:
    raise SystemExit(PREEMPTED_EXIT_STATUS)


def run() -> None:
  """Console-script entry point."""
  run_app(
    __name__,
    lambda argv: run_reporting_bad_input("jitr-train", lambda: main(argv)),
    flags_parser=parse_flags_reporting_unknown_fields("jitr-train"),
  )


if __name__ == "__main__":
  run()
