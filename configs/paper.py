"""The papers' settings on Flickr30K / COCO / IAPR TC-12 features and CMAL²R's labelled vectors.

Use as ``--config=configs/paper.py:DATA,MODEL,LOSS``.

DATA: ``f30k`` or ``coco`` (COCO tests on ``testall``: 5K, plus the 1K five folds), or
``iaprtc12`` (LSEH's IAPR TC-12 release, ``iaprtc12_precomp``: one caption per image;
the networks LSEH trains on it, ``vsepp``, ``vsrn``, ``sgr`` / ``saf`` and ``vseinf``,
with the settings of its ``IAPRTC12/`` scripts: :data:`IAPRTC12_SETTINGS`), or
CMAL²R's ``wiki`` / ``pascal`` (labelled vectors, MODEL ``twobranch``, LOSS ``cmal2r`` or
``triplet``; ``--config.labelled.folder`` names the folder).
MODEL (each with its official training settings; every hardest-negative loss from the
first step unless said):

- ``vsepp`` (VSE++†: region Dense 1024 + max-pool, GRU 1024; Adam 5e-4, 20 epochs,
  batch 128, grad clip 2);
- ``vseinf`` (the official VSE∞, woodfrog/vse_infty ``train_region.sh`` + README: BUTD
  regions through Linear + MLP and GPO, BERT-base captions through Linear and GPO, the
  ``"vseinf"`` network; embed 1024; captions tokenised by the BERT folder's WordPiece
  ``vocab.txt``, which ``--config.text.pretrained=FOLDER`` must name (e.g. a copy of
  bert-base-uncased); training drops each word with the official augmentation at 0.2 and
  each region at 0.2; AdamW 5e-4, weight decay 1e-4, the BERT's learning rate × 0.1,
  batch 128, clip 2, 25 epochs, ×0.1 at epoch 15; one epoch of sum-of-hinges warm-up);
- ``vseinf_bigru`` (not the official network: jitr's dual encoder with GPO pooling on both
  towers and a BiGRU over word embeddings of jitr's vocabulary; AdamW 5e-4, 30 epochs,
  ×0.1 at epoch 15; one epoch of sum-of-hinges warm-up);
- ``sgr`` / ``saf`` (SGRAF, Paranioar/SGRAF ``opts.py`` + README: embed 1024, sim 256,
  3 SGR steps, BiGRU; Adam 2e-4, batch 128, clip 2; F30K SGR 40 epochs ×0.1 at 30, SAF
  30 epochs ×0.1 at 20, COCO 20 epochs ×0.1 at 10). With LOSS ``lseh`` the LSEH
  repository's SGRAF settings (yangong23/VSEnetworksLSEH ``SGRAF_LSEH/opts.py``,
  ``train.py``): Adam 4e-4, batch 84, 40 epochs ×0.1 at 20, margin 0.185;
- ``vsrn`` (KunpengLi1994/VSRN README commands: embed 2048, word 300, captioning loss
  weight 1, a captioner of hidden size 512 and word size 300 (``train.py``'s dim_hidden,
  dim_word); Adam 2e-4, batch 128, clip 2, 30 epochs, ×0.1 every 10 epochs on F30K and
  every 15 on COCO; F30K batch-normalises the image embedding, COCO l2-normalises the fc
  output). The official VSRN picks its best checkpoint by R@1 + R@5 of both directions;
  jitr by RSUM;
- ``cvse`` (BruceW91/CVSE ``train_f30k.py`` / ``train_coco.py``: embed 1024, word 300,
  36 regions, BatchNorm + tanh, dropout 0.4, 300 concepts, label ratio 0.35 / 0.4,
  fusion α 0.85 in training and 0.85 / 0.9 at evaluation, label completion and the
  0.95 / 0.05 mix; Adam 2e-4, batch 128, clip 2, F30K 50 epochs ×0.1 at 25, COCO 30
  epochs ×0.1 at 15, the GCN ×0.2 at the same epochs). The concepts are built from the
  training captions with one-hot vectors unless ``--config.concepts.source`` names a
  folder (the official GloVe vectors need the official files).
- ``twobranch`` (CMAL²R's experiments, ``wiki`` and ``pascal`` only: one MLP per modality
  into a common space, ``jitr.models.TwoBranch``). What CMAL²R states and jitr follows:
  the data (Wikipedia: 2,866 pairs, 10 classes, 4096-d fc7 image and 100-d word2vec text
  vectors, 2,000 train / 866 test; Pascal: 5,000 train / 4,919 test pairs, 20 classes,
  512-d GIST and 399-d tag-frequency vectors), the adaptive listwise loss with α = 0.4
  and β = 0.5, and the evaluation (class MAP over the whole test set, both directions).
  The other settings are jitr's choices, not taken from the paper (``_twobranch``): the
  widths (one hidden layer of 2048 per branch, a 512-d common space: the two-branch
  network of Wang et al., 2016), Adam at 1e-4 without decay, batch 100, 50 epochs, pairs
  sharing a class as each other's positives in a batch, and a validation split (jitr
  keeps the best checkpoint by its class MAP) of 200 (Wikipedia) / 500 (Pascal) training
  pairs held out, so the networks train on 1,800 / 4,500 pairs.

LOSS: ``triplet``, ``sndcg`` (+ Smooth-NDCG, sentence RSC), ``cmal2r``,
``sam`` (CIDEr-D margins), ``lseh`` (TF-IDF+SVD, k = 400).

  jitr-train --config=configs/paper.py:f30k,vsepp,sndcg --workdir=runs/f30k_vsepp_sndcg \
      --config.precomp_root=/data/precomp        # holds f30k_precomp/ and coco_precomp/
"""

import ml_collections

from jitr.config_files import sibling_config

default = sibling_config(__file__, "default")
shapes = sibling_config(__file__, "shapes")
common = sibling_config(__file__, "common")

DATASETS = ("f30k", "coco", "iaprtc12", "wiki", "pascal")
# CMAL²R's labelled vector datasets, the network and the losses they take
LABELLED_DATASETS = ("wiki", "pascal")
LABELLED_MODELS = ("twobranch",)
LABELLED_LOSSES = ("triplet", "cmal2r")
# training pairs held out for validation (the datasets' splits have no validation part)
VAL_PAIRS = {"wiki": 200, "pascal": 500}


def _adam(
  learning_rate: float, decay_epochs: tuple[int, ...], **extra
) -> ml_collections.ConfigDict:
  """configs/default.py's optimizer group as the papers set it: Adam at ``learning_rate``,
  clip 2, ×0.1 at ``decay_epochs``, one rate for every module (``extra``: more fields,
  e.g. AdamW's ``name`` and ``weight_decay``)."""
  group = default.get_config().optimizer
  papers = dict(
    name="adam",
    learning_rate=learning_rate,
    grad_clip=2.0,
    decay_epochs=decay_epochs,
    decay_factor=0.1,
    module_decay_factors={},
    module_lr_factors={},
  )
  group.update({**papers, **extra})
  return group


def _vsepp(c: ml_collections.ConfigDict, data: str, loss: str) -> None:
  c.model = ml_collections.ConfigDict(
    dict(
      image="regions",
      text="gru",
      embed_dim=1024,
      word_dim=300,
      image_pooling="max",
      text_pooling="last",
    )
  )
  c.optimizer = _adam(5e-4, ())
  c.num_epochs = 20
  c.loss = default.without_warmup(c.loss)  # VSE++ trains max-violation from the start


def _vseinf(c: ml_collections.ConfigDict, data: str, loss: str) -> None:
  """The official VSE∞ (the module docstring); the loss keeps its warm-up epoch."""
  c.model = ml_collections.ConfigDict(
    # dtype / remat: the BERT's compute dtype ("bfloat16": its matrix products) and its
    # layers recomputed in the backward pass; the official code trains float32, no remat
    dict(name="vseinf", embed_dim=1024, img_dim=2048, dtype="float32", remat=False)
  )
  c.text.word_augment = 0.2  # process_caption's 20 %
  c.image.region_drop = 0.2  # PrecompRegionDataset: rand_list > 0.20 kept
  c.optimizer = _adamw(decay_epochs=(15,))
  c.optimizer.module_lr_factors = {"bert": 0.1}  # VSEModel: the BERT at lr × 0.1
  c.num_epochs = 25


def _adamw(decay_epochs: tuple[int, ...]) -> ml_collections.ConfigDict:
  """VSE∞'s AdamW: 5e-4, weight decay 1e-4, clip 2, ×0.1 at ``decay_epochs``."""
  return _adam(5e-4, decay_epochs, name="adamw", weight_decay=1e-4)


def _vseinf_bigru(c: ml_collections.ConfigDict, data: str, loss: str) -> None:
  """GPO on both towers of jitr's dual encoder, BiGRU captions: not the official network."""
  c.model = ml_collections.ConfigDict(
    dict(
      image="regions",
      text="bigru",
      embed_dim=1024,
      word_dim=300,
      image_pooling="gpo",
      text_pooling="gpo",
    )
  )
  c.optimizer = _adamw(decay_epochs=(15,))
  c.num_epochs = 30


# (epochs, the epoch of the ×0.1 decay) of the official SGRAF runs
SGRAF_SCHEDULES = {
  ("f30k", "sgr"): (40, 30),
  ("f30k", "saf"): (30, 20),
  ("coco", "sgr"): (20, 10),
  ("coco", "saf"): (20, 10),
}


def _sgraf(name: str):
  def configure(c: ml_collections.ConfigDict, data: str, loss: str) -> None:
    c.model = ml_collections.ConfigDict(
      dict(
        name=name,
        word_dim=300,
        embed_dim=1024,
        sim_dim=256,
        sgr_step=3,
        num_region=36,
        smooth=9.0,
        # how the pairs are scored (jitr.models.SGRAF): memory and compile time, not values
        block_size=8,
        length_buckets=8,
        remat="full",
      )
    )
    c.loss = default.without_warmup(c.loss)  # max-violation from step 1
    if loss == "lseh":  # the LSEH repository's SGRAF settings
      c.optimizer = _adam(4e-4, (20,))
      c.num_epochs, c.batch_size = 40, 84
      return
    # IAPR TC-12 takes LSEH's settings afterwards (IAPRTC12_SETTINGS)
    epochs, decay = SGRAF_SCHEDULES.get((data, name), SGRAF_SCHEDULES[("f30k", name)])
    c.optimizer = _adam(2e-4, (decay,))
    c.num_epochs = epochs

  return configure


def _vsrn(c: ml_collections.ConfigDict, data: str, loss: str) -> None:
  c.model = ml_collections.ConfigDict(
    dict(
      name="vsrn",
      dataset=data,
      embed_dim=2048,
      word_dim=300,
      caption_weight=1.0,
      caption_hidden_dim=512,  # the captioner: dim_hidden
      caption_word_dim=300,  # dim_word
    )
  )
  c.optimizer = _adam(2e-4, (10, 20) if data == "f30k" else (15,))
  c.num_epochs = 30
  c.loss = default.without_warmup(c.loss)  # --max_violation from the start


def _cvse(c: ml_collections.ConfigDict, data: str, loss: str) -> None:
  f30k = data == "f30k"
  c.model = ml_collections.ConfigDict(
    dict(
      name="cvse",
      img_dim=2048,
      word_dim=300,
      embed_dim=1024,
      num_region=36,
      label_ratio=0.35 if f30k else 0.4,  # Concept_label_ratio
      eval_fuse_alpha=0.85 if f30k else 0.9,  # evalrank's fuse_weight
      label_completion=data,
    )
  )
  c.concepts.num_concepts = 300
  c.optimizer = _adam(2e-4, (25,) if f30k else (15,))  # lr_update
  c.optimizer.module_decay_factors = {"gcn": 0.2}  # the GCN's lr: × 0.2 every lr_update
  c.num_epochs = 50 if f30k else 30
  c.loss = default.without_warmup(c.loss)  # --max_violation from the start


# The settings of yangong23/VSEnetworksLSEH's ``<NETWORK>_LSEH/IAPRTC12/`` scripts (their
# argparse defaults and the README commands), applied over the network's own.


def _iapr_vsepp(c: ml_collections.ConfigDict) -> None:
  # VSEpp_LSEH/IAPRTC12/trainIAPRTC12.py: Adam 8e-4, ×0.1 every 8 epochs, 30 epochs,
  # batch 128, --max_violation (README)
  c.optimizer = _adam(8e-4, (8, 16, 24))
  c.num_epochs = 30


def _iapr_vsrn(c: ml_collections.ConfigDict) -> None:
  # VSRN_LSEH/IAPRTC12: Adam 5e-4, ×0.1 every 20 epochs, 30 epochs, --max_len 60; its
  # image encoder takes the non-F30K branch (l2norm, no BatchNorm): IAPRTC12_precomp
  c.model.dataset = "coco"
  c.optimizer = _adam(5e-4, (20,))
  c.num_epochs = 30
  c.max_caption_len = 60


def _iapr_sgraf(c: ml_collections.ConfigDict) -> None:
  # SGRAF_LSEH/IAPRTC12/opts.py: Adam 4e-4, 40 epochs ×0.1 at 20, batch 128
  c.optimizer = _adam(4e-4, (20,))
  c.num_epochs, c.batch_size = 40, 128


def _iapr_vseinf(c: ml_collections.ConfigDict) -> None:
  # VSEinfty_LSEH/IAPRTC12/arguments.py + trainIAPRTC12.py: AdamW 8e-4 (BERT × 0.1),
  # ×0.1 at epochs 10 and 20 (lr_update, lr_update2), 30 epochs, batch 84, max-violation
  # from the first epoch (vse_mean_warmup_epochs 0)
  c.optimizer = _adamw(decay_epochs=(10, 20))
  c.optimizer.learning_rate = 8e-4
  c.optimizer.module_lr_factors = {"bert": 0.1}
  c.num_epochs, c.batch_size = 30, 84
  c.loss = default.without_warmup(c.loss)


IAPRTC12_SETTINGS = {
  "vsepp": _iapr_vsepp,
  "vsrn": _iapr_vsrn,
  "sgr": _iapr_sgraf,
  "saf": _iapr_sgraf,
  "vseinf": _iapr_vseinf,
}
"""The networks LSEH trains on IAPR TC-12 and the settings of its scripts for each."""


def _iaprtc12(model: str):
  """:data:`IAPRTC12_SETTINGS` of ``model``; another network is refused in one line."""
  if model not in IAPRTC12_SETTINGS:
    raise ValueError(
      f"configs/paper.py: iaprtc12 runs the networks LSEH trains on it "
      f"({', '.join(IAPRTC12_SETTINGS)}), not {model!r}"
    )
  return IAPRTC12_SETTINGS[model]


def _twobranch(c: ml_collections.ConfigDict, data: str, loss: str) -> None:
  """CMAL²R's experiments: the two-branch network on ``wiki`` / ``pascal`` (the module
  docstring says which settings come from the paper and which are jitr's choices)."""
  c.dataset = data
  c.test_split = "test"
  c.eval_folds = 0
  c.model = ml_collections.ConfigDict(
    dict(name="twobranch", image_hidden=(2048,), text_hidden=(2048,), embed_dim=512)
  )
  c.labelled.val_pairs = VAL_PAIRS[data]
  c.labelled.val_name = ""
  c.labelled.positives = "class"  # CMAL²R's relevance: a shared class
  c.optimizer = _adam(1e-4, ())
  c.batch_size = 100
  c.num_epochs = 50
  c.loss = default.without_warmup(c.loss)  # the hardest-negative triplet from the start


MODELS = {
  "vsepp": _vsepp,
  "vseinf": _vseinf,
  "vseinf_bigru": _vseinf_bigru,
  "sgr": _sgraf("sgr"),
  "saf": _sgraf("saf"),
  "vsrn": _vsrn,
  "cvse": _cvse,
  "twobranch": _twobranch,
}


# shapes' rows but the oracle (jitr_shapes only), the teacher-taught ones (their teacher
# is a shapes run; give a teacher with --config.graded.relevance='teacher:W') and the
# contrastive ones of pixel towers (configs/clip.py trains those on image folders)
LOSSES = tuple(
  v
  for v in shapes.VARIANTS
  if v != "oracle" and v not in shapes.TEACHER_SOURCES and v not in shapes.TOWER_VARIANTS
)


def labelled_fit(data: str, model: str, loss: str) -> bool:
  """Whether DATA and MODEL agree on labelled vectors: CMAL²R's datasets take the
  two-branch network and its losses, the precomp features every other network."""
  if data in LABELLED_DATASETS:
    return model in LABELLED_MODELS and loss in LABELLED_LOSSES
  return model not in LABELLED_MODELS


def specs() -> list[str]:
  """Every ``DATA,MODEL,LOSS`` this file builds (IAPR TC-12 with LSEH's networks only)."""
  return [
    f"{data},{model},{loss}"
    for data in DATASETS
    for model in MODELS
    for loss in LOSSES
    if labelled_fit(data, model, loss) and (data != "iaprtc12" or model in IAPRTC12_SETTINGS)
  ]


def get_config(spec: str = "f30k,vsepp,sndcg") -> ml_collections.ConfigDict:
  arg = common.parse_arg(
    spec,
    config="configs/paper.py",
    data=common.choices(*DATASETS),
    model=common.choices(*MODELS),
    loss=common.choices(*LOSSES),
  )
  data, model, loss = arg.data, arg.model, arg.loss
  if not labelled_fit(data, model, loss):
    raise ValueError(
      f"configs/paper.py: DATA {LABELLED_DATASETS} (labelled vectors) take MODEL "
      f"{LABELLED_MODELS} and LOSS one of {LABELLED_LOSSES}, the other DATA the other MODELs; "
      f"got {spec!r}"
    )
  c = shapes.get_config(loss)  # the loss terms and graded inputs of that row
  base = default.get_config()
  c.dataset = f"{data}_precomp"
  c.test_split = "testall" if data == "coco" else "test"
  c.eval_folds = 5 if data == "coco" else 0
  c.vocab_min_count = 4
  c.max_caption_len = 64
  c.batch_size = 128
  c.estimators = base.estimators
  c.estimators.lsa.k = 400
  MODELS[model](c, data, loss)
  if data == "iaprtc12":
    _iaprtc12(model)(c)
  return c
