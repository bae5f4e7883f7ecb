"""The papers' settings on Flickr30K / COCO precomp features.

Use as ``--config=configs/paper.py:DATA,MODEL,LOSS``.

DATA: ``f30k`` or ``coco`` (COCO tests on ``testall``: 5K, plus the 1K five folds).
MODEL: ``vsepp`` (VSE++†: region Dense 1024 + max-pool, GRU 1024; Adam 5e-4,
20 epochs, batch 128, grad clip 2; max-violation from the start) or ``vseinf``
(VSE∞: GPO pooling on both towers, BiGRU; AdamW 5e-4, 30 epochs, ×0.1 at
epoch 15; one epoch of sum-of-hinges warm-up).
LOSS: ``triplet``, ``sndcg`` (+ Smooth-NDCG, sentence RSC), ``cmal2r``,
``sam`` (CIDEr-D margins), ``lseh`` (TF-IDF+SVD, k = 400).

  jitr-train --config=configs/paper.py:f30k,vsepp,sndcg --workdir=runs/f30k_vsepp_sndcg \
      --config.precomp_root=/data/precomp        # holds f30k_precomp/ and coco_precomp/
"""

import pathlib
import sys

import ml_collections

# `configs` is a folder of the checkout, not an installed package: make its siblings
# importable however the file was loaded (jitr-train from any directory, python -m).
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

from configs import default, shapes  # noqa: E402

DATASETS = ("f30k", "coco")
MODELS = ("vsepp", "vseinf")


def get_config(spec: str = "f30k,vsepp,sndcg") -> ml_collections.ConfigDict:
  try:
    data, model, loss = spec.split(",")
  except ValueError:
    raise ValueError(f"configs/paper.py: expected 'DATA,MODEL,LOSS', got {spec!r}") from None
  if data not in DATASETS or model not in MODELS:
    raise ValueError(
      f"configs/paper.py: DATA in {DATASETS}, MODEL in {MODELS}; got {data!r}, {model!r}"
    )
  if loss not in shapes.VARIANTS or loss == "oracle":
    raise ValueError(
      f"configs/paper.py: LOSS must be one of {[v for v in shapes.VARIANTS if v != 'oracle']}"
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
  if model == "vsepp":
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
    c.optimizer = ml_collections.ConfigDict(
      dict(name="adam", learning_rate=5e-4, grad_clip=2.0, decay_epochs=(), decay_factor=0.1)
    )
    c.num_epochs = 20
    c.loss = default.without_warmup(c.loss)  # VSE++ trains max-violation from the start
  else:
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
    c.optimizer = ml_collections.ConfigDict(
      dict(
        name="adamw",
        learning_rate=5e-4,
        weight_decay=1e-4,
        grad_clip=2.0,
        decay_epochs=(15,),
        decay_factor=0.1,
      )
    )
    c.num_epochs = 30
  return c
