"""A tiny random Hugging Face BERT folder (config.json, vocab.txt, model.safetensors) for
the tests that train or tokenise as the official VSE∞ does."""

from __future__ import annotations

import json
import pathlib
import string
from collections.abc import Iterable

import numpy as np

from jitr.models.bert import BertConfig
from jitr.models.bert.convert import _expected_shapes

SPECIALS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
# every lower-case word splits into these pieces when it is not a token itself
LETTERS = tuple(string.ascii_lowercase) + tuple(f"##{c}" for c in string.ascii_lowercase)


def write_bert_folder(
  folder, words: Iterable[str] = (), *, hidden: int = 16, layers: int = 1, seed: int = 0
) -> pathlib.Path:
  """``folder`` holding a BERT of ``hidden`` wide, ``layers`` layers of 2 heads, whose
  ``vocab.txt`` is the special tokens, ``words`` (sorted, once each) and the letters; its
  weights random normal (σ 0.02) in Hugging Face's tensor names."""
  folder = pathlib.Path(folder)
  folder.mkdir(parents=True, exist_ok=True)
  tokens = [*SPECIALS, *sorted(set(words) - set(SPECIALS) - set(LETTERS)), *LETTERS]
  (folder / "vocab.txt").write_text("\n".join(tokens) + "\n", encoding="utf-8")
  config = BertConfig(len(tokens), hidden, layers, 2, 2 * hidden, max_position_embeddings=64)
  values = dict(
    model_type="bert",
    vocab_size=config.vocab_size,
    hidden_size=hidden,
    num_hidden_layers=layers,
    num_attention_heads=2,
    intermediate_size=2 * hidden,
    max_position_embeddings=64,
  )
  (folder / "config.json").write_text(json.dumps(values), encoding="utf-8")
  from safetensors.numpy import save_file

  rng = np.random.default_rng(seed)
  state = {
    name: (rng.normal(0, 0.02, shape) + (1.0 if name.endswith("LayerNorm.weight") else 0.0)).astype(
      np.float32
    )
    for name, shape in _expected_shapes(config).items()
  }
  save_file(state, str(folder / "model.safetensors"))
  return folder
