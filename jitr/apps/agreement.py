"""jitr-relevance-agreement: how well each relevance estimator ranks pairs like people do.

  jitr-relevance-agreement --captions=../shared/data/flickr8k/Flickr8k.token.txt \
      --judgments=../shared/data/flickr8k/CrowdFlowerAnnotations.txt

Prints a markdown table of Kendall tau (x100): tau-b for CrowdFlower, tau-c for
the expert file (see jitr.relevance.agreement for the protocol).
"""

from __future__ import annotations

from absl import app, flags, logging

from jitr.apps._cli import run_reporting_bad_input

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
_ESTIMATORS = flags.DEFINE_list(
  "estimators", ["cider", "sentence", "lsa"], "Estimators to compare."
)
_MODEL = flags.DEFINE_string(
  "model", None, "sentence: Sentence-Transformers model name or path (default all-MiniLM-L6-v2)."
)
_LSA_K = flags.DEFINE_integer("lsa_k", 400, "lsa: SVD components.")
_LSA_N_ITER = flags.DEFINE_integer("lsa_n_iter", 100, "lsa: randomized SVD iterations.")
_SEED = flags.DEFINE_integer("seed", 0, "lsa: SVD random state.")
_OUTPUT = flags.DEFINE_string("output", None, "Also write the table (markdown) to this file.")


def main(argv: list[str]) -> None:
  if len(argv) > 1:
    raise app.UsageError(f"unexpected arguments: {argv[1:]}")
  run_reporting_bad_input(
    "jitr-relevance-agreement", _main
  )  # bad input: one clear line, exit code 1


def _main() -> None:
  from jitr.relevance import agreement
  from jitr.relevance.captions_io import read_captions

  captions = read_captions(_CAPTIONS.value, "flickr8k")
  judgments = agreement.read_judgments(_JUDGMENTS.value, _FORMAT.value, _EXPERT_SCORES.value)
  protocol = agreement.build_protocol(judgments, captions, _OWN.value)
  logging.info("%d judged pairs (%s)", len(protocol.candidates), judgments.fmt)
  scores = agreement.score_protocol(
    protocol,
    captions,
    _ESTIMATORS.value,
    sentence_model=_MODEL.value,
    lsa_k=_LSA_K.value,
    lsa_n_iter=_LSA_N_ITER.value,
    seed=_SEED.value,
    log=logging.info,
  )
  rows = agreement.agreement_table(scores, protocol)
  published = agreement.PUBLISHED_CROWDFLOWER_TAU_B if judgments.fmt == "crowdflower" else None
  table = agreement.format_table(rows, protocol.tau_variant, published)
  print(f"{judgments.source}: {len(protocol.candidates)} judged pairs\n")
  print(table)
  if _OUTPUT.value:
    with open(_OUTPUT.value, "w", encoding="utf-8") as f:
      f.write(table + "\n")


def run() -> None:
  """Console-script entry point."""
  flags.mark_flags_as_required(["captions", "judgments"])
  app.run(main)


if __name__ == "__main__":
  run()
