"""CLIP's BPE and the Hugging Face text tokenizer on hand-checked cases (every Flickr8k
caption against open_clip's own tokenizers: tests/parity)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from jitr.data.clip_bpe import ClipBpe, bytes_to_unicode, clean_lower
from jitr.data.hf_text_tokenizer import HfTextTokenizer, canonicalize


@pytest.fixture(scope="module")
def bpe():
  return ClipBpe()


def test_known_ids(bpe):
  # CLIP's README example: "a photo of a dog" -> SOT, a, photo, of, a, dog, EOT
  assert bpe.encode("a photo of a dog") == [320, 1125, 539, 320, 1929]
  assert bpe.vocab_size == 49408 and (bpe.sot, bpe.eot) == (49406, 49407)
  row = bpe(["A  Photo of a DOG."], context_length=10)[0]
  assert row.tolist() == [49406, 320, 1125, 539, 320, 1929, 269, 49407, 0, 0]


def test_truncation_keeps_the_eot_last(bpe):
  ids = bpe("dog " * 100)
  assert ids.shape == (1, 77) and ids.dtype == np.int32
  assert ids[0, 0] == 49406 and ids[0, -1] == 49407 and (ids[0, 1:-1] == 1929).all()
  assert bpe([""]).tolist()[0][:3] == [49406, 49407, 0]


def test_cleaning_and_bytes():
  assert clean_lower(" A &amp;amp; B\n  c ") == "a & b c"
  assert clean_lower("caf\u00c3\u00a9") == "café"  # ftfy repairs mojibake
  table = bytes_to_unicode()
  assert len(set(table.values())) == 256 and table[ord("a")] == "a" and table[32] == "Ġ"


def _word_tokenizer(folder):
  """A T5-like tokenizer.json: whole words, ``</s>`` appended, ``<pad>`` id 0."""
  from tokenizers import Tokenizer, models, pre_tokenizers, processors

  vocab = {"<pad>": 0, "</s>": 1, "<unk>": 2, "a": 3, "dog": 4, "runs": 5, "fast": 6}
  tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
  tok.pre_tokenizer = pre_tokenizers.Whitespace()
  tok.post_processor = processors.TemplateProcessing(single="$A </s>", special_tokens=[("</s>", 1)])
  tok.save(str(folder / "tokenizer.json"))


def test_hf_tokenizer_pads_cuts_and_cleans(tmp_path):
  _word_tokenizer(tmp_path)
  (tmp_path / "tokenizer_config.json").write_text(json.dumps({"pad_token": {"content": "<pad>"}}))
  ids = HfTextTokenizer(str(tmp_path), 6)(["A dog, runs!", "a dog runs fast fast fast", "cat"])
  assert ids.tolist() == [[3, 4, 5, 1, 0, 0], [3, 4, 5, 6, 6, 1], [2, 1, 0, 0, 0, 0]]
  assert canonicalize("The_Dog's  (big) ball!") == "the dogs big ball"


def test_hf_tokenizer_faults(tmp_path):
  with pytest.raises(
    FileNotFoundError, match=r"no tokenizer\.json \(expected a Hugging Face tokenizer folder\)$"
  ):
    HfTextTokenizer(str(tmp_path), 8)
  (tmp_path / "tokenizer.json").write_text("{not json")
  with pytest.raises(ValueError, match=r"tokenizer\.json: not a readable tokenizer\.json \("):
    HfTextTokenizer(str(tmp_path), 8)
  _word_tokenizer(tmp_path)
  (tmp_path / "tokenizer_config.json").write_text('["<pad>"]')
  with pytest.raises(
    ValueError, match=r"tokenizer_config\.json: holds a JSON list, expected an object$"
  ):
    HfTextTokenizer(str(tmp_path), 8)
