"""jitr-relevance-quality: each graded source, calibrated or not, against jitr_shapes' truth;
or, with ``--eccv_captions``, each source's ranking of COCO's 5K test split against ECCV
Caption's positives.

  jitr-relevance-quality --data_dir=/tmp/jitr/tfds --output=/tmp/jitr/relevance_quality.json \\
      --config.estimators.lsa.k=64
  jitr-relevance-quality --eccv_captions=data/coco_precomp/testall_caps.txt \\
      --estimators=constant,vectors:sentence

``--estimators`` takes the graded sources of training (``config.graded``): ``oracle``,
``constant``, ``vectors:NAME``, ``coverage:NAME``, ``topk:NAME``, ``teacher:WORKDIR`` and
``hmean:A|B`` / ``mean:A|B``; their estimators' settings are ``--config.estimators.NAME.FIELD``
overrides of the one default (:func:`jitr.relevance.registry.default_estimator_settings`).
Prints one markdown table and writes the rows as JSON (``--output``). Flag parsing, then
:func:`jitr.experiment.relevance_quality.relevance_quality_report` (the columns are
described in :mod:`!jitr.experiment.quality_table`).
"""

from __future__ import annotations

from absl import flags, logging

from jitr import paths
from jitr.apps._cli import App, Input, config_dict_flag
from jitr.relevance.registry import estimators_config

DEFAULT_ESTIMATORS = ["oracle", "vectors:sentence", "vectors:lsa", "topk:cider"]
DEFAULT_CALIBRATIONS = [
  "none",
  "minmax",
  "power:2",
  "minmax,power:2",
  "isotonic:crowdflower-sentence",
]


def teacher_inputs() -> list[Input]:
  """The ``teacher:WORKDIR`` workdirs that ``--estimators`` names (also inside ``hmean:`` /
  ``mean:``), each an input that must exist (checked before jitr_shapes is built); a
  source that does not parse is left to the report, which names it."""
  from jitr.training.graded import parse_source  # JAX loads only when the app runs

  out = []
  for spec in _ESTIMATORS.value:
    try:
      leaves = parse_source(spec).leaves()
    except ValueError:
      continue
    for leaf in leaves:
      if leaf.stored == "teacher":
        workdir = leaf.estimator
        missing = f"teacher:{workdir}: no such workdir ({paths.absolute(workdir)})"
        out.append(Input(workdir, missing))
  return out


def inputs() -> list[Input]:
  """The teachers' workdirs (:func:`teacher_inputs`) and the ``--eccv_captions`` file."""
  out = teacher_inputs()
  if _ECCV_CAPTIONS.value:
    out.append(Input(_ECCV_CAPTIONS.value, f"--eccv_captions={_ECCV_CAPTIONS.value}: no such file"))
  return out


APP = App("jitr-relevance-quality", __name__, inputs=inputs)

_DATA_DIR = flags.DEFINE_string(
  "data_dir", None, "TFDS data dir holding (or to hold) jitr_shapes (not with --eccv_captions)."
)
_ECCV_CAPTIONS = flags.DEFINE_string(
  "eccv_captions",
  None,
  "COCO's 5K test captions (the standard testall_caps.txt): rank them by each source and "
  "score the rankings against ECCV Caption's positives (mAP@R, R-P; Listwise ITR's Table I) "
  "instead of jitr_shapes' exact relevance.",
)
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
  APP.name, estimators_config(), "Estimator settings: --config.estimators.NAME.FIELD=VALUE."
)


def main() -> None:
  """Prints (and with ``--output`` writes) the quality table of the flags' sources."""
  # Imported here, not at the top: `jitr-relevance-quality --help` answers without loading
  # TensorFlow Datasets and the training stack.
  from jitr.experiment.relevance_quality import QualityGrid, relevance_quality_report

  if _ECCV_CAPTIONS.value:
    print(eccv_table())
    return
  if not _DATA_DIR.value:
    raise ValueError(f"--data_dir is required: {flags.FLAGS['data_dir'].help}")
  table = relevance_quality_report(
    _DATA_DIR.value,
    QualityGrid(_SPLITS.value, _ESTIMATORS.value, _CALIBRATIONS.value),
    shapes_config=_SHAPES_CONFIG.value,
    settings=_CONFIG.value.estimators,
    output=_OUTPUT.value,
    log=logging.info,
    progress=_PROGRESS.value,
  )
  print(table)


def eccv_table() -> str:
  """The ECCV Caption table of ``--eccv_captions`` (written as JSON with ``--output``)."""
  from jitr.experiment.eccv_relevance import eccv_relevance_rows, format_eccv_table
  from jitr.fileio import write_json_atomic
  from jitr.relevance.captions_io import read_precomp_captions

  captions = read_precomp_captions(_ECCV_CAPTIONS.value, 5)
  settings = _CONFIG.value.estimators
  rows = eccv_relevance_rows(captions, _ESTIMATORS.value, settings=settings, log=logging.info)
  if _OUTPUT.value:
    write_json_atomic(_OUTPUT.value, {"captions": _ECCV_CAPTIONS.value, "rows": rows})
  return format_eccv_table(rows)


def run() -> None:
  """Console-script entry point."""
  APP.run(main)


if __name__ == "__main__":
  run()
