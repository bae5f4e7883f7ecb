"""jitr-relevance-calibrate: fit the isotonic map of each estimator's relevance to human judgments.

  jitr-relevance-calibrate --captions=$FLICKR8K/Flickr8k.token.txt \\
      --judgments=$FLICKR8K/CrowdFlowerAnnotations.txt --estimators=sentence

Writes ``<output_dir>/crowdflower-<estimator>.json`` (default: the tables shipped in
jitr/losses/calibration_tables), applied by ``isotonic:crowdflower-<estimator>``.
Estimator settings are ``--config.estimators.NAME.FIELD`` overrides of the one default
(:func:`jitr.relevance.registry.default_estimator_settings`). Flag parsing, then
:func:`jitr.relevance.calibration_fit.fit_calibration_tables` (the fit is described there).
"""

from __future__ import annotations

from absl import flags, logging

from jitr.apps._cli import App, config_dict_flag, flag_inputs
from jitr.relevance.calibration_fit import fit_calibration_tables
from jitr.relevance.registry import estimators_config

APP = App(
  "jitr-relevance-calibrate",
  __name__,
  requires=("captions", "judgments"),
  inputs=flag_inputs("captions", "judgments"),
)

_CAPTIONS = flags.DEFINE_string("captions", None, "Flickr8k.token.txt.")
_JUDGMENTS = flags.DEFINE_string("judgments", None, "CrowdFlowerAnnotations.txt.")
_ESTIMATORS = flags.DEFINE_list("estimators", ["sentence"], "Estimators to fit a map for.")
_OUTPUT_DIR = flags.DEFINE_string(
  "output_dir", None, "Where to write the tables (default: jitr/losses/calibration_tables)."
)
_CONFIG = config_dict_flag(
  APP.name, estimators_config(), "Estimator settings: --config.estimators.NAME.FIELD=VALUE."
)


def main() -> None:
  """Fits and writes the map of each of ``--estimators``, printing a line per table."""
  lines = fit_calibration_tables(
    _CAPTIONS.value,
    _JUDGMENTS.value,
    _ESTIMATORS.value,
    settings=_CONFIG.value.estimators,
    output_dir=_OUTPUT_DIR.value,
    log=logging.info,
  )
  print("\n".join(lines))


def run() -> None:
  """Console-script entry point."""
  APP.run(main)


if __name__ == "__main__":
  run()
