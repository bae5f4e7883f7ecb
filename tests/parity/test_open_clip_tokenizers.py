"""jitr's tokenizers give open_clip's ids on every Flickr8k caption (40,460): CLIP's BPE
(``open_clip.get_tokenizer``) and SigLIP's Hugging Face tokenizer with open_clip's
``canonicalize`` cleaning (``open_clip.tokenizer.HFTokenizer``), the latter from a T5-like
``tokenizer.json`` this test trains with the ``tokenizers`` library."""

from __future__ import annotations

import json

import numpy as np
import open_clip
import pytest
from open_clip.tokenizer import HFTokenizer
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

from jitr.data.clip_bpe import ClipBpe
from jitr.data.hf_text_tokenizer import HfTextTokenizer
from tests.data_folders import data_folder

pytestmark = pytest.mark.open_clip


@pytest.fixture(scope="module")
def captions():
  folder = data_folder("JITR_FLICKR8K", "flickr8k", "Flickr8k.token.txt", "Flickr8k text package")
  lines = (folder / "Flickr8k.token.txt").read_text(encoding="utf-8").splitlines()
  texts = [line.split("\t", 1)[1] for line in lines if "\t" in line]
  assert len(texts) == 40460
  # and the cases cleaning and truncation are for
  return texts + ["A &amp;amp; B", "  Café   naïve  ", "x " * 100, "it's 3 o'clock!!", ""]


def test_clip_bpe_equals_open_clip(captions):
  theirs = open_clip.get_tokenizer("ViT-B-32")(captions).numpy()
  ours = ClipBpe()(captions)
  assert ours.dtype == np.int32
  mismatched = np.flatnonzero((ours != theirs).any(axis=1))
  assert mismatched.size == 0, [captions[i] for i in mismatched[:5]]


def test_siglip_tokenizer_equals_open_clip(captions, tmp_path):
  tok = Tokenizer(models.Unigram())
  tok.pre_tokenizer = pre_tokenizers.Metaspace()
  tok.decoder = decoders.Metaspace()
  special = ["<pad>", "</s>", "<unk>"]
  trainer = trainers.UnigramTrainer(vocab_size=3000, special_tokens=special, unk_token="<unk>")
  tok.train_from_iterator(captions[:20000], trainer)
  tok.post_processor = processors.TemplateProcessing(single="$A </s>", special_tokens=[("</s>", 1)])
  tok.save(str(tmp_path / "tokenizer.json"))
  config = {"tokenizer_class": "PreTrainedTokenizerFast", "pad_token": "<pad>", "eos_token": "</s>"}
  config["unk_token"] = "<unk>"
  (tmp_path / "tokenizer_config.json").write_text(json.dumps(config))
  theirs = HFTokenizer(str(tmp_path), context_length=64, clean="canonicalize")(captions).numpy()
  ours = HfTextTokenizer(str(tmp_path), 64)(captions)
  assert (theirs[:, -1] == 0).any() and (theirs == 1).any()  # padded rows and EOS both occur
  mismatched = np.flatnonzero((ours != theirs).any(axis=1))
  assert mismatched.size == 0, [captions[i] for i in mismatched[:5]]
