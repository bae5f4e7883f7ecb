"""jitr-precompute: relevance estimates of a caption file -> TFRecords.

  jitr-precompute --captions=data/f30k_precomp/train_caps.txt --estimator=sentence \
    --out=rel/f30k_sentence
  jitr-precompute --captions=../shared/data/flickr8k/Flickr8k.token.txt --estimator=cider \
    --top_k=100 --out=rel/f8k_cider

A re-run with the same arguments finishes an interrupted run (complete shards
are skipped); an --out written for other captions or settings is refused.
Several processes or hosts share one --out with --num_workers=N and
--worker_index=i (one process per i, e.g. a job array); the last one to finish
completes the header, and the files are those of a single process.
"""

from __future__ import annotations

from absl import app, flags, logging

from jitr.apps._cli import run_reporting_bad_input

_CAPTIONS = flags.DEFINE_string(
  "captions", None, "Caption file: precomp *_caps.txt (5 lines per image) or Flickr8k.token.txt."
)
_FORMAT = flags.DEFINE_enum(
  "format", "auto", ["auto", "precomp", "flickr8k"], "Caption file format."
)
_CAPS_PER_IMAGE = flags.DEFINE_integer(
  "captions_per_image", 5, "Lines per image of a precomp caption file.", lower_bound=1
)
_ESTIMATOR = flags.DEFINE_enum(
  "estimator", None, ["sentence", "cider", "lsa", "tokens"], "Relevance estimator."
)
_OUT = flags.DEFINE_string(
  "out", None, "Output directory (header relevance.json + TFRecord shards)."
)
_TOP_K = flags.DEFINE_integer(
  "top_k",
  None,
  "Keep the K best captions per image (default: 100 for cider, none for sentence/lsa/tokens).",
  lower_bound=1,
)
_VECTORS = flags.DEFINE_bool(
  "vectors",
  None,
  "Store per-caption vectors (default: yes for sentence/lsa/tokens, impossible for cider).",
)
_IMAGES_PER_SHARD = flags.DEFINE_integer(
  "images_per_shard", 1024, "Images per TFRecord shard.", lower_bound=1
)
_NUM_WORKERS = flags.DEFINE_integer(
  "num_workers", 1, "Processes sharing the shards of --out (one per --worker_index)."
)
_WORKER_INDEX = flags.DEFINE_integer(
  "worker_index", 0, "This process's index in [0, num_workers): it writes shards s % N == i."
)
_MODEL = flags.DEFINE_string(
  "model",
  "all-MiniLM-L6-v2",
  "sentence/tokens: Sentence-Transformers model name or local path.",
)
_BATCH_SIZE = flags.DEFINE_integer(
  "batch_size", 256, "sentence/tokens: captions per forward pass.", lower_bound=1
)
_DEVICE = flags.DEFINE_string("device", "cpu", "sentence/tokens: torch device.")
_CODEBOOK_SIZE = flags.DEFINE_integer(
  "codebook_size", 256, "tokens: codebook entries (each caption stores 2x this).", lower_bound=1
)
_AGGREGATE = flags.DEFINE_enum(
  "aggregate", "max", ["max", "mean"], "sentence/lsa: aggregation over an image's references."
)
_LSA_K = flags.DEFINE_integer("lsa_k", 400, "lsa: SVD components.", lower_bound=1)
_LSA_N_ITER = flags.DEFINE_integer(
  "lsa_n_iter", 100, "lsa: randomized SVD iterations.", lower_bound=1
)
_SEED = flags.DEFINE_integer("seed", 0, "lsa: SVD random state; tokens: the codebook's draw.")


def estimator_kwargs(name: str) -> dict:
  """The estimator's keyword arguments from the flags."""
  model = {"model": _MODEL.value, "batch_size": _BATCH_SIZE.value, "device": _DEVICE.value}
  if name == "sentence":
    return {**model, "aggregate": _AGGREGATE.value}
  if name == "tokens":
    return {**model, "codebook_size": _CODEBOOK_SIZE.value, "seed": _SEED.value}
  if name == "lsa":
    return {
      "k": _LSA_K.value,
      "n_iter": _LSA_N_ITER.value,
      "seed": _SEED.value,
      "aggregate": _AGGREGATE.value,
    }
  return {}


def main(argv: list[str]) -> None:
  if len(argv) > 1:
    raise app.UsageError(f"unexpected arguments: {argv[1:]}")
  run_reporting_bad_input("jitr-precompute", _main)  # bad input: one clear line, exit code 1


def _main() -> None:
  from jitr.relevance.captions_io import read_captions
  from jitr.relevance.records import write_relevance_records
  from jitr.relevance.registry import make_estimator

  captions = read_captions(_CAPTIONS.value, _FORMAT.value, _CAPS_PER_IMAGE.value)
  logging.info(
    "%s: %d images, %d captions", captions.source, captions.num_images, captions.num_captions
  )
  estimator = make_estimator(_ESTIMATOR.value, **estimator_kwargs(_ESTIMATOR.value))
  header = write_relevance_records(
    _OUT.value,
    captions,
    estimator,
    vectors=_VECTORS.value,
    top_k=_TOP_K.value,
    images_per_shard=_IMAGES_PER_SHARD.value,
    num_workers=_NUM_WORKERS.value,
    worker_index=_WORKER_INDEX.value,
    log=logging.info,
  )
  n, done = header["num_shards"], sum(e is not None for e in header["shards"])
  if done == n:
    print(
      f"wrote {n} shards of {_ESTIMATOR.value} relevance for {captions.num_images} images "
      f"to {_OUT.value}"
    )
  else:
    print(
      f"worker {_WORKER_INDEX.value} of {_NUM_WORKERS.value}: its shards are written; "
      f"{done} of {n} shards of {_OUT.value} complete (the last worker completes the header)"
    )


def run() -> None:
  """Console-script entry point."""
  flags.mark_flags_as_required(["captions", "estimator", "out"])
  app.run(main)


if __name__ == "__main__":
  run()
