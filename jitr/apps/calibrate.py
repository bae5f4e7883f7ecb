"""jitr-relevance-calibrate: fit the isotonic map of each estimator's relevance to human judgments.

  jitr-relevance-calibrate --captions=../shared/data/flickr8k/Flickr8k.token.txt \
      --judgments=../shared/data/flickr8k/CrowdFlowerAnnotations.txt --estimators=sentence

For every judged (image, caption) pair of the CrowdFlower protocol
(jitr.relevance.agreement: the judged caption removed from its image's
references), x = the estimator's relevance ``clip(score / relevance_scale, 0, 1)``
(RSC for ``sentence``), y = the fraction of people who said yes; the isotonic
(non-decreasing) fit of y on x is written as knots to
``<output_dir>/crowdflower-<estimator>.json`` (default: the tables shipped in
jitr/losses/calibration_tables), which ``isotonic:crowdflower-<estimator>``
applies by linear interpolation (jitr.losses.calibration).
"""

from __future__ import annotations

import os

from absl import app, flags, logging

from jitr.apps._cli import run_reporting_bad_input

_CAPTIONS = flags.DEFINE_string("captions", None, "Flickr8k.token.txt.")
_JUDGMENTS = flags.DEFINE_string("judgments", None, "CrowdFlowerAnnotations.txt.")
_ESTIMATORS = flags.DEFINE_list("estimators", ["sentence"], "Estimators to fit a map for.")
_MODEL = flags.DEFINE_string("model", None, "sentence: model name or path (all-MiniLM-L6-v2).")
_LSA_K = flags.DEFINE_integer("lsa_k", 400, "lsa: SVD components.")
_OUTPUT_DIR = flags.DEFINE_string(
  "output_dir", None, "Where to write the tables (default: jitr/losses/calibration_tables)."
)


def fitted_table(name: str, x, y, *, source: str, params: dict) -> dict:
  """The JSON object of one fitted map: knots ``x``/``y`` (6 decimals) and how it was fitted."""
  import numpy as np

  from jitr.relevance.isotonic import isotonic_fit

  kx, ky = isotonic_fit(np.round(np.asarray(x, np.float64), 6), y)  # knots stay distinct
  return {
    "estimator": name,
    "params": params,
    "judgments": os.path.basename(source),
    "pairs": int(len(x)),
    "fit": "isotonic regression (PAV), non-decreasing; x = estimator relevance, "
    "y = fraction of yes; applied by linear interpolation, constant beyond the ends",
    "command": "jitr-relevance-calibrate",
    "x": [float(v) for v in kx],
    "y": [round(float(v), 6) for v in np.clip(ky, 0.0, 1.0)],
  }


def _main() -> None:
  import numpy as np

  from jitr.fileio import write_json_atomic
  from jitr.losses.calibration import TABLES_DIR, check_table
  from jitr.relevance import agreement
  from jitr.relevance.captions_io import read_captions
  from jitr.relevance.registry import make_estimator

  captions = read_captions(_CAPTIONS.value, "flickr8k")
  judgments = agreement.read_judgments(_JUDGMENTS.value, "crowdflower")
  protocol = agreement.build_protocol(judgments, captions)
  out_dir = _OUTPUT_DIR.value or TABLES_DIR
  os.makedirs(out_dir, exist_ok=True)
  for name in _ESTIMATORS.value:
    kwargs = {
      "sentence": {"show_progress": False} | ({"model": _MODEL.value} if _MODEL.value else {}),
      "lsa": {"k": _LSA_K.value},
    }.get(name, {})
    estimator = make_estimator(name, **kwargs)
    logging.info("scoring %d judged pairs with %s", len(protocol.candidates), name)
    if estimator.stores_vectors:  # fitted on the corpus (cosine: LSA's vocabulary; tokens: idf)
      estimator.fit(captions)
    scores = estimator.pair_scores(protocol.candidates, protocol.reference_sets)
    x = np.clip(np.asarray(scores, np.float64) / estimator.relevance_scale, 0.0, 1.0)
    table = fitted_table(
      name, x, protocol.human, source=judgments.source, params=estimator.params()
    )
    path = os.path.join(out_dir, f"crowdflower-{name}.json")
    check_table(table["x"], table["y"], path)
    write_json_atomic(path, table, indent=None, sort_keys=False)
    print(f"{path}: {len(table['x'])} knots from {table['pairs']} judged pairs")


def main(argv: list[str]) -> None:
  if len(argv) > 1:
    raise app.UsageError(f"unexpected arguments: {argv[1:]}")
  run_reporting_bad_input("jitr-relevance-calibrate", _main)


def run() -> None:
  """Console-script entry point."""
  flags.mark_flags_as_required(["captions", "judgments"])
  app.run(main)


if __name__ == "__main__":
  run()
