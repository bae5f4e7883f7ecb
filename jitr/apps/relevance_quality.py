"""jitr-relevance-quality: each relevance estimator, calibrated or not, against jitr_shapes' truth.

  jitr-relevance-quality --data_dir=/tmp/jitr/tfds --output=/tmp/jitr/relevance_quality.json

For each split (val, test) of jitr_shapes (built under ``--data_dir`` if absent),
each estimator (``oracle``: the exact relevance; ``constant``: 0.5 everywhere;
``sentence``, ``lsa``, ``cider``: fitted on the split's own captions as training
fits them on train's; ``teacher:WORKDIR``: ``(1 + cos)/2`` of a trained dual
encoder's embeddings of the split's images and captions; ``hmean:A|B`` /
``mean:A|B``: the harmonic / arithmetic mean of such estimators, as the graded
sources of training combine them) and each calibration chain (jitr.losses.calibration), the
estimator's in-split relevance is what training builds: ``clip(score / scale, 0,
1)`` over image i's reference captions (RSC: ``(1 + max_k cos)/2``; CIDEr-D / 10
over all captions rather than a top-K list), annotated positives 1. Image queries
calibrate its rows, caption queries its columns. Reported (x100 except MAE and
gain@0; jitr.evaluation.relevance_quality):

* Kendall tau-b over all (image, caption) pairs with the exact relevance, on the
  image-row and caption-column calibrated matrices (equal unless the chain is per
  query; a strictly increasing elementwise chain keeps the uncalibrated tau);
* NDCG@10 and mAP@R of ranking each query's gallery by the estimate (i2t, t2i);
* MAE and gain@0 (mean ``2^r − 1`` of exact-0 pairs), on the image-row matrix.

Prints one markdown table and writes the rows as JSON (``--output``).
"""

from __future__ import annotations

import os

from absl import app, flags, logging

from jitr.apps._cli import run_reporting_bad_input

DEFAULT_CALIBRATIONS = [
  "none",
  "minmax",
  "power:2",
  "minmax,power:2",
  "isotonic:crowdflower-sentence",
]

_DATA_DIR = flags.DEFINE_string("data_dir", None, "TFDS data dir holding (or to hold) jitr_shapes.")
_SHAPES_CONFIG = flags.DEFINE_string("shapes_config", "default", "jitr_shapes config (or tiny).")
_SPLITS = flags.DEFINE_list("splits", ["val", "test"], "Splits to score.")
_ESTIMATORS = flags.DEFINE_list(
  "estimators",
  ["oracle", "sentence", "lsa", "cider"],
  "oracle, constant, registry names (sentence, lsa, cider), teacher:WORKDIR (a trained dual "
  "encoder) and combinations hmean:A|B / mean:A|B of these.",
)
_CALIBRATIONS = flags.DEFINE_multi_string(
  "calibration", DEFAULT_CALIBRATIONS, "Calibration chains (repeat the flag for several)."
)
_MODEL = flags.DEFINE_string("model", None, "sentence: model name or path (all-MiniLM-L6-v2).")
_LSA_K = flags.DEFINE_integer("lsa_k", 64, "lsa: SVD components (configs/default.py: 64).")
_OUTPUT = flags.DEFINE_string("output", None, "Also write the rows as JSON to this file.")


def _estimator_kwargs() -> dict[str, dict]:
  """The registry estimators' settings, by name."""
  sentence = {"show_progress": False} | ({"model": _MODEL.value} if _MODEL.value else {})
  return {"sentence": sentence, "lsa": {"k": _LSA_K.value}}


def _teacher_workdirs(names: list[str]) -> list[str]:
  """The ``teacher:WORKDIR`` workdirs the estimators name (alone or inside a combination)."""
  from jitr.training.graded import PART_SEPARATOR

  parts = [p for n in names for p in n.partition(":")[2].split(PART_SEPARATOR)] + names
  return list(dict.fromkeys(p.partition(":")[2] for p in parts if p.startswith("teacher:")))


def _main() -> None:
  from jitr.apps.quality import estimated_relevance, format_table, quality_rows
  from jitr.data import shapes_tfds
  from jitr.experiment.stored_relevance import caption_set
  from jitr.experiment.teachers import shapes_split_embeddings
  from jitr.fileio import write_json_atomic
  from jitr.losses.calibration import parse_calibration

  for spec in _CALIBRATIONS.value:  # bad chains fail before anything is computed
    parse_calibration(spec)
  shapes_tfds.build(_DATA_DIR.value, _SHAPES_CONFIG.value)
  teachers = _teacher_workdirs(_ESTIMATORS.value)
  rows = []
  for split in _SPLITS.value:
    data = shapes_tfds.load_split(
      split, data_dir=_DATA_DIR.value, config=_SHAPES_CONFIG.value, images=bool(teachers)
    )
    embeddings = {  # each teacher encodes the split once, whatever the estimators reuse it
      w: shapes_split_embeddings(w, data, _SHAPES_CONFIG.value) for w in teachers
    }
    exact = shapes_tfds.split_relevance(
      split, data_dir=_DATA_DIR.value, config=_SHAPES_CONFIG.value
    )
    captions = caption_set(data["captions"], 5, f"jitr_shapes/{_SHAPES_CONFIG.value}/{split}")
    for name in _ESTIMATORS.value:
      logging.info("%s: %s", split, name)
      estimated, positives = estimated_relevance(
        name, captions, exact, estimator_kwargs=_estimator_kwargs(), teacher=embeddings.get
      )
      for row in quality_rows(estimated, exact, positives, _CALIBRATIONS.value, log=logging.info):
        rows.append({"split": split, "estimator": name, **row})
  table = format_table(rows)
  print(table)
  if _OUTPUT.value:
    meta = {
      "shapes_config": _SHAPES_CONFIG.value,
      "lsa_k": _LSA_K.value,
      "model": _MODEL.value,
      "teachers": {w: os.path.abspath(w) for w in teachers},
    }
    write_json_atomic(_OUTPUT.value, {"settings": meta, "rows": rows})


def main(argv: list[str]) -> None:
  if len(argv) > 1:
    raise app.UsageError(f"unexpected arguments: {argv[1:]}")
  run_reporting_bad_input("jitr-relevance-quality", _main)


def run() -> None:
  """Console-script entry point."""
  flags.mark_flags_as_required(["data_dir"])
  app.run(main)


if __name__ == "__main__":
  run()
