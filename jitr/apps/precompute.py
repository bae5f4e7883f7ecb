"""jitr-precompute: relevance estimates of a caption file -> TFRecords.

  jitr-precompute --captions=data/f30k_precomp/train_caps.txt --estimator=sentence \\
    --out=rel/f30k_sentence
  jitr-precompute --captions=$FLICKR8K/Flickr8k.token.txt --estimator=lsa \\
    --out=rel/f8k_lsa --config.estimators.lsa.k=64
  jitr-precompute --captions=data/f30k_precomp/test_caps.txt --scores=spice=spice_test.json \\
    --out=rel/f30k_test_spice

The estimator's settings are ``--config.estimators.NAME.FIELD`` overrides of the one
default (:func:`jitr.relevance.registry.default_estimator_settings`, the same fields as
``jitr-train``'s ``config.estimators``). A re-run with the same arguments finishes an
interrupted run (complete shards are skipped); an --out written for other captions or
settings is refused. Several processes or hosts share one --out: started by a cluster
(a Cloud TPU pod slice, SLURM, Open MPI, Kubernetes), the same command on every host
takes each one's share from the job JAX detects; otherwise pass --num_workers=N and
--worker_index=i (one process per i, e.g. a job array). The last one to finish completes
the header, and the files are those of a single process. Progress goes to stderr as one
line (each worker its own share: images written of the total, images per second, ETA;
``--noprogress`` for none); stdout gets only the closing summary. With ``--scores=NAME=FILE``
instead of ``--estimator``, scores computed elsewhere (SPICE) are stored as the top-K records
of estimator NAME (``topk:NAME``), every caption kept unless ``--top_k`` says otherwise.
Flag parsing, then :func:`!jitr.relevance.precompute.precompute`.
"""

from __future__ import annotations

from absl import flags, logging

from jitr.apps._cli import App, config_dict_flag, flag_inputs
from jitr.relevance.captions_io import CAPTION_FORMATS
from jitr.relevance.precompute import PrecomputeOptions, PrecomputeSource, precompute
from jitr.relevance.registry import ESTIMATORS, estimators_config
from jitr.training.cluster import worker_share

APP = App(
  "jitr-precompute",
  __name__,
  requires=("captions", "out"),
  inputs=flag_inputs("captions", "image_ids"),
)

_CAPTIONS = flags.DEFINE_string(
  "captions", None, "Caption file: precomp *_caps.txt, Flickr8k.token.txt or a Karpathy .json."
)
_FORMAT = flags.DEFINE_enum(
  "format", "auto", CAPTION_FORMATS, "Caption file format (auto: by its suffix and first line)."
)
_CAPS_PER_IMAGE = flags.DEFINE_integer("captions_per_image", 5, "Captions per image", lower_bound=1)
_SPLIT = flags.DEFINE_list("split", ["train", "restval"], "A Karpathy file's splits read.")
_ESTIMATOR = flags.DEFINE_enum(
  "estimator", None, sorted(ESTIMATORS), "Relevance estimator (or --scores)."
)
_SCORES = flags.DEFINE_string(
  "scores",
  None,
  "Scores computed elsewhere, NAME=FILE (e.g. spice=spice_test.json), instead of --estimator: "
  "stored as the top-K records of estimator NAME (graded source topk:NAME). FILE: a .csv or "
  ".tsv with the columns image, caption, score, or a .json {image: {caption: score}} (a "
  "score may be SPICE's per-candidate dict); image: its id in --captions (precomp: its "
  "index) or --image_ids; caption: its index in --captions; pairs not in FILE score 0.",
)
_SCALE = flags.DEFINE_float(
  "scale",
  1.0,
  "With --scores: the largest possible score (1 for SPICE's F-score); relevance = "
  "score / scale, and a score outside [0, scale] is refused.",
)
_IMAGE_IDS = flags.DEFINE_string(
  "image_ids",
  None,
  "With --scores: a file of the images' ids, one per line (line i + 1: the id of image i of "
  "--captions), when FILE names images by such ids (e.g. COCO image ids).",
)
_OUT = flags.DEFINE_string(
  "out",
  None,
  "Output directory (header relevance.json + TFRecord shards): a folder or a gs:// URL.",
)
_TOP_K = flags.DEFINE_integer(
  "top_k",
  None,
  "Keep the K best captions per image (default: 100 for cider, none for sentence/lsa/tokens, "
  "every caption for --scores).",
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
  "num_workers",
  None,
  "Processes sharing the shards of --out (one per --worker_index). Default: the process "
  "count of the job JAX detects (Cloud TPU pod slice, SLURM, Open MPI, Kubernetes), 1 "
  "without one.",
  lower_bound=1,
)
_WORKER_INDEX = flags.DEFINE_integer(
  "worker_index",
  None,
  "This process's index in [0, num_workers): it writes shards s % N == i. Default: the "
  "process index in the detected job, 0 without one.",
  lower_bound=0,
)
_PROGRESS = flags.DEFINE_bool(
  "progress",
  True,
  "Show one progress line on stderr: this worker's images written of its total, images per "
  "second and ETA (redrawn in place on a terminal, a line every 10 s in a log).",
)
_CONFIG = config_dict_flag(
  APP.name, estimators_config(), "Estimator settings: --config.estimators.NAME.FIELD=VALUE."
)


def main() -> None:
  """Writes this worker's shards of ``--out`` and prints the closing summary."""
  source = PrecomputeSource(
    _ESTIMATOR.value, _SCORES.value, _VECTORS.value, _SCALE.value, _IMAGE_IDS.value
  )
  num_workers, worker_index = worker_share(_NUM_WORKERS.value, _WORKER_INDEX.value)
  options = PrecomputeOptions(
    caption_format=_FORMAT.value,
    captions_per_image=_CAPS_PER_IMAGE.value,
    splits=tuple(_SPLIT.value),
    top_k=_TOP_K.value,
    images_per_shard=_IMAGES_PER_SHARD.value,
    num_workers=num_workers,
    worker_index=worker_index,
    log=logging.info,
    progress=_PROGRESS.value,
  )
  settings = _CONFIG.value.estimators
  line = precompute(_CAPTIONS.value, _OUT.value, source, settings=settings, options=options)
  print(line)


def run() -> None:
  """Console-script entry point."""
  APP.run(main)


if __name__ == "__main__":
  run()
