"""jitr-relevance-quality: each graded source, calibrated or not, against jitr_shapes' truth.

  jitr-relevance-quality --data_dir=/tmp/jitr/tfds --output=/tmp/jitr/relevance_quality.json \\
      --config.estimators.lsa.k=64

``--estimators`` takes the graded sources of training (``config.graded``): ``oracle``,
``constant``, ``vectors:NAME``, ``coverage:NAME``, ``topk:NAME``, ``teacher:WORKDIR`` and
``hmean:A|B`` / ``mean:A|B``; their estimators' settings are ``--config.estimators.NAME.FIELD``
overrides of the one default (:func:`jitr.relevance.registry.default_estimator_settings`).
Prints one markdown table and writes the rows as JSON (``--output``). Flag parsing, then
:func:`jitr.experiment.relevance_quality.relevance_quality_report` (the columns are
described in :mod:`!jitr.experiment.quality_table`).
"""

from __future__ import annotations

from absl import app, flags, logging

from jitr.apps._cli import config_dict_flag, run_app, run_reporting_bad_input
from jitr.relevance.registry import estimators_config

DEFAULT_ESTIMATORS = ["oracle", "vectors:sentence", "vectors:lsa", "topk:cider"]
DEFAULT_CALIBRATIONS = [
  "none",
  "minmax",
  "power:2",
  "minmax,power:2",
  "isotonic:crowdflower-sentence",
]

NAME = "jitr-relevance-quality"

_DATA_DIR = flags.DEFINE_string("data_dir", None, "TFDS data dir holding (or to hold) jitr_shapes.")
_SHAPES_CONFIG = flags.DEFINE_string("shapes_config", "default", "jitr_shapes config (or tiny).")
_SPLITS = flags.DEFINE_list("splits", ["val", "test"], "Splits to score.")
_ESTIMATORS = flags.DEFINE_list(
  "estimators",
  DEFAULT_ESTIMATORS,
  "Graded sources, as in config.graded: oracle, constant, vectors:NAME, coverage:NAME, "
  "topk:NAME, teacher:WORKDIR (a trained dual encoder), hmean:A|B / mean:A|B.",
)
_CALIBRATIONS = flags.DEFINE_multi_string(
  "calibration", DEFAULT_CALIBRATIONS, "Calibration chains (repeat the flag for several)."
)
_OUTPUT = flags.DEFINE_string("output", None, "Also write the rows as JSON to this file.")
_PROGRESS = flags.DEFINE_bool(
  "progress",
  True,
  "Show one progress line on stderr: (split, source) pairs scored of the total, ETA.",
)
_CONFIG = config_dict_flag(
  NAME, estimators_config(), "Estimator settings: --config.estimators.NAME.FIELD=VALUE."
)


def main(argv: list[str]) -> None:
  if len(argv) > 1:
    raise app.UsageError(f"unexpected arguments: {argv[1:]}")
  # Imported here, not at the top: `jitr-relevance-quality --help` answers without loading
  # TensorFlow Datasets and the training stack.
  from jitr.experiment.relevance_quality import relevance_quality_report

  table = run_reporting_bad_input(  # bad input: one clear line, exit code 1
    NAME,
    lambda: relevance_quality_report(
      _DATA_DIR.value,
      shapes_config=_SHAPES_CONFIG.value,
      splits=_SPLITS.value,
      estimators=_ESTIMATORS.value,
      calibrations=_CALIBRATIONS.value,
      settings=_CONFIG.value.estimators,
      output=_OUTPUT.value,
      log=logging.info,
      progress=_PROGRESS.value,
    ),
  )
  print(table)


def run() -> None:
  """Console-script entry point."""
  flags.mark_flags_as_required(["data_dir"])
  run_app(__name__, main)


if __name__ == "__main__":
  run()
