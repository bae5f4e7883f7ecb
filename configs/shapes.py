"""One row per loss and network on jitr_shapes: ``--config=configs/shapes.py:NAME[,MODEL]``.

NAME: ``triplet`` (VSE++ LMH), ``sndcg`` (triplet + Smooth-NDCG, sentence
relevance = configs/default.py), ``cmal2r``, ``sam`` (CIDEr-D margins),
``lseh`` (TF-IDF+SVD hard negatives), ``oracle`` (triplet + Smooth-NDCG on the
exact relevance), ``hmean`` (triplet + Smooth-NDCG on the harmonic mean of sentence
RSC and the image-aware relevance of a teacher: the ``triplet`` row's workdir,
``workdirs/shapes/triplet`` unless ``--config.graded.relevance`` names another, see
``teacher_relevance``), ``teacher`` (the same on the teacher's relevance alone),
``calibrated`` (``sndcg`` with its sentence relevance calibrated by the CrowdFlower
isotonic map, ``isotonic:crowdflower-sentence``), ``coverage`` (``sndcg`` on token
coverage, ``coverage:tokens``: how much of each caption the image's references state,
:mod:`jitr.relevance.token_coverage`), ``coverage_minmax`` / ``coverage_sharp`` (the
same calibrated per query by ``minmax,power:2`` / ``minmax,power:8``), ``coverage_sharp_w075``
(``coverage_sharp`` at Smooth-NDCG weight 0.75: issue 14's target, README "Three seeds"),
``coverage_hmean`` (on the harmonic mean of token coverage and the teacher's relevance).
scripts/shapes_table.py runs them all and prints the table.
Every row with a hardest-negative term (all but ``cmal2r``) starts with VSE∞'s
one-epoch sum-of-hinges warm-up (``default.with_warmup``).

MODEL: ``vse`` (default: configs/default.py's region encoder + GRU), ``sgr`` / ``saf``
(SGRAF's similarity models) or ``vsrn`` (VSRN with its captioning loss), each at
jitr_shapes' scale (3 regions of 128 features, a 135-word vocabulary): smaller widths
than the papers', the same structure (SGR: 3 reasoning steps; VSRN: region GCN + GRU +
captioning decoder). Sizing (issue target: one row in about 15 minutes on 2 CPU cores):
SGR and SAF score all 128 × 128 (image, caption) pairs of a batch and the 1,000 × 5,000
pairs of every validation and test pass, each over the caption's word slots, so they
are narrow (embed 64, sim 16), cut captions at 32 tokens (0.3% of jitr_shapes' captions
are longer, up to 46) and train 2 epochs (the warm-up epoch, then the loss). Measured on
the shared 2-core machine under load 5-8 (the run got under one core): a ``triplet,sgr``
step took about 21 s at embed 256 / sim 64 / 48 words and about 4.5 s at the sizes here
(2.3-2.5 s with the machine otherwise idle: about 40 minutes a row). Since the
length-bucketed pair scoring (jitr.models.sgraf_head), a whole row takes 10-13 minutes
for SGR and 5-7 for SAF on the shared cores (load 2-5), within the target.
VSRN, a dual encoder, trains the 4 epochs of the VSE rows (6-9 minutes a row).
"""

import pathlib
import sys

import ml_collections

# `configs` is a folder of the checkout, not an installed package: make its siblings
# importable however the file was loaded (jitr-train from any directory, python -m).
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

from configs import default  # noqa: E402

VARIANTS = (
  "triplet",
  "sndcg",
  "cmal2r",
  "sam",
  "lseh",
  "oracle",
  "hmean",
  "teacher",
  "calibrated",
  "coverage",
  "coverage_minmax",
  "coverage_sharp",
  "coverage_sharp_w075",
  "coverage_hmean",
)
# variant -> its graded relevance, "{}" standing for the teacher's workdir: the vse
# triplet run of the same seed, trained first (DEFAULT_TEACHER unless given)
TEACHER_SOURCES = {
  "hmean": "hmean:vectors:sentence|teacher:{}",
  "teacher": "teacher:{}",
  "coverage_hmean": "hmean:coverage:tokens|teacher:{}",
}
DEFAULT_TEACHER = "workdirs/shapes/triplet"


def teacher_relevance(name: str, teacher_workdir: str = DEFAULT_TEACHER) -> str:
  """The graded relevance of a teacher-taught row (``TEACHER_SOURCES``), e.g.
  ``hmean`` -> ``hmean(sentence RSC, teacher:WORKDIR)``."""
  return TEACHER_SOURCES[name].format(teacher_workdir)


# token-coverage rows -> (their calibration: per query, the least relevant candidate to 0,
# then a power that widens the gap between likely and unlikely matches; the Smooth-NDCG
# weight beside the triplet's 1: below 1 the triplet keeps the annotated captions first)
COVERAGE_ROWS = {
  "coverage": ("", 1.0),
  "coverage_minmax": ("minmax,power:2", 1.0),
  "coverage_sharp": ("minmax,power:8", 1.0),
  "coverage_sharp_w075": ("minmax,power:8", 0.75),
}

SGRAF_SHAPES = dict(word_dim=128, embed_dim=64, sim_dim=16, sgr_step=3, num_region=3)
# SGR / SAF: 2 epochs (warm-up, then the loss); captions cut at 32 tokens (0.3% of
# jitr_shapes' captions are longer, up to 46): the pair cost grows with (words + 1)².
SGRAF_TRAINING = {"num_epochs": 2, "max_caption_len": 32}
# MODEL -> (config.model, other config fields); "vse" keeps configs/default.py's
MODELS = {
  "vse": (None, {}),
  "sgr": ({"name": "sgr", **SGRAF_SHAPES}, SGRAF_TRAINING),
  "saf": ({"name": "saf", **SGRAF_SHAPES}, SGRAF_TRAINING),
  "vsrn": (
    {
      "name": "vsrn",
      "dataset": "coco",
      "word_dim": 128,
      "embed_dim": 256,
      "gcn_layers": 2,
      "caption_hidden_dim": 128,
      "caption_word_dim": 128,
      "caption_weight": 1.0,
    },
    {"num_epochs": 4},
  ),
}


def get_config(spec: str = "sndcg") -> ml_collections.ConfigDict:
  name, _, model = spec.partition(",")
  model = model or "vse"
  if name not in VARIANTS:
    raise ValueError(f"configs/shapes.py: unknown variant {name!r}; expected one of {VARIANTS}")
  if model not in MODELS:
    raise ValueError(f"configs/shapes.py: unknown MODEL {model!r}; expected one of {tuple(MODELS)}")
  c = _loss_config(name)
  model_config, fields = MODELS[model]
  if model_config is not None:
    c.model = ml_collections.ConfigDict(model_config)
  for field, value in fields.items():
    c[field] = value
  return c


def _loss_config(name: str) -> ml_collections.ConfigDict:
  c = default.get_config()  # sndcg: warm-up, then triplet (LMH) + Smooth-NDCG
  triplet = {"weight": 1.0, "margin": 0.2, "mining": "max"}
  if name == "triplet":
    c.loss = default.with_warmup({"triplet": triplet})
    c.graded = ml_collections.ConfigDict({})
  elif name == "cmal2r":
    c.loss = ml_collections.ConfigDict(
      {"adaptive_listwise": {"weight": 1.0, "sharpness": 0.5, "alpha": 0.4}}
    )
    c.graded = ml_collections.ConfigDict({})
  elif name == "sam":
    c.loss = default.with_warmup(
      {
        "sam": {
          "loss": "semantic_margin_triplet",
          "weight": 1.0,
          "input": "cider",
          "temperature": 5.0,
          "sampling": "hard",
          "keep_triplet": True,
        }
      }
    )
    c.graded = ml_collections.ConfigDict({"cider": "topk:cider"})
  elif name == "lseh":
    c.loss = default.with_warmup(
      {
        "lseh": {
          "loss": "semantic_hard_negatives",
          "weight": 1.0,
          "input": "semantic",
          "margin": 0.185,
          "semantic_weight": 0.025,
        }
      }
    )
    c.graded = ml_collections.ConfigDict({"semantic": "cosine:lsa"})
  elif name == "oracle":
    c.graded = ml_collections.ConfigDict({"relevance": "oracle"})
  elif name == "calibrated":
    c.calibration.relevance = "isotonic:crowdflower-sentence"
  elif name in COVERAGE_ROWS:
    c.graded = ml_collections.ConfigDict({"relevance": "coverage:tokens"})
    c.calibration.relevance, c.loss.smooth_ndcg.weight = COVERAGE_ROWS[name]
  elif name in TEACHER_SOURCES:
    c.graded = ml_collections.ConfigDict({"relevance": teacher_relevance(name)})
  return c
