"""One row per loss on jitr_shapes: ``--config=configs/shapes.py:NAME``.

NAME: ``triplet`` (VSE++ LMH), ``sndcg`` (triplet + Smooth-NDCG, sentence
relevance = configs/default.py), ``cmal2r``, ``sam`` (CIDEr-D margins),
``lseh`` (TF-IDF+SVD hard negatives), ``oracle`` (triplet + Smooth-NDCG on the
exact relevance). scripts/shapes_table.py runs them all and prints the table.
Every row with a hardest-negative term (all but ``cmal2r``) starts with VSE∞'s
one-epoch sum-of-hinges warm-up (``default.with_warmup``).
"""

import pathlib
import sys

import ml_collections

# `configs` is a folder of the checkout, not an installed package: make its siblings
# importable however the file was loaded (jitr-train from any directory, python -m).
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

from configs import default  # noqa: E402

VARIANTS = ("triplet", "sndcg", "cmal2r", "sam", "lseh", "oracle")


def get_config(name: str = "sndcg") -> ml_collections.ConfigDict:
  if name not in VARIANTS:
    raise ValueError(f"configs/shapes.py: unknown variant {name!r}; expected one of {VARIANTS}")
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
  return c
