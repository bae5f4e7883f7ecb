"""jitr-relevance-agreement: how well each relevance estimator ranks pairs like people do.

  jitr-relevance-agreement --captions=$FLICKR8K/Flickr8k.token.txt \\
      --judgments=$FLICKR8K/CrowdFlowerAnnotations.txt

Prints a markdown table of Kendall tau (x100): tau-b for CrowdFlower, tau-c for
the expert file (see jitr.relevance.agreement for the protocol). Estimator settings
are ``--config.estimators.NAME.FIELD`` overrides of the one default
(:func:`jitr.relevance.registry.default_estimator_settings`). Flag parsing, then
:func:`jitr.relevance.agreement_report.agreement_report`.
"""

from __future__ import annotations

from absl import flags, logging

from jitr.apps._cli import App, config_dict_flag, flag_inputs
from jitr.relevance.agreement_report import DEFAULT_ESTIMATORS, ProtocolOptions, agreement_report
from jitr.relevance.registry import estimators_config

APP = App(
  "jitr-relevance-agreement",
  __name__,
  requires=("captions", "judgments"),
  inputs=flag_inputs("captions", "judgments"),
)

_CAPTIONS = flags.DEFINE_string(
  "captions", None, "Flickr8k.token.txt (the captions the judgments refer to)."
)
_JUDGMENTS = flags.DEFINE_string(
  "judgments",
  None,
  "CrowdFlowerAnnotations.txt, ExpertAnnotations.txt or a file in the same columns.",
)
_FORMAT = flags.DEFINE_enum(
  "judgments_format",
  "auto",
  ["auto", "crowdflower", "expert"],
  "Judgments columns (auto: from the file name).",
)
_EXPERT_SCORES = flags.DEFINE_enum(
  "expert_scores",
  "mean",
  ["mean", "separate"],
  "Expert: average the three scores, or one judgment per score (CLIPScore).",
)
_OWN = flags.DEFINE_enum(
  "own_caption",
  None,
  ["remove", "skip"],
  "A judged caption that is a reference of its image: remove it from the references "
  "(CrowdFlower default) or skip the pair (expert default).",
)
_ESTIMATORS = flags.DEFINE_list("estimators", list(DEFAULT_ESTIMATORS), "Estimators to compare.")
_OUTPUT = flags.DEFINE_string("output", None, "Also write the table (markdown) to this file.")
_PROGRESS = flags.DEFINE_bool(
  "progress", True, "Show one progress line on stderr: estimators scored of the total, ETA."
)
_CONFIG = config_dict_flag(
  APP.name, estimators_config(), "Estimator settings: --config.estimators.NAME.FIELD=VALUE."
)


def main() -> None:
  """Prints (and with ``--output`` writes) the agreement table of the flags' estimators."""
  report = agreement_report(
    _CAPTIONS.value,
    _JUDGMENTS.value,
    protocol=ProtocolOptions(_FORMAT.value, _EXPERT_SCORES.value, _OWN.value),
    estimators=_ESTIMATORS.value,
    settings=_CONFIG.value.estimators,
    output=_OUTPUT.value,
    log=logging.info,
    progress=_PROGRESS.value,
  )
  print(report)


def run() -> None:
  """Console-script entry point."""
  APP.run(main)


if __name__ == "__main__":
  run()
