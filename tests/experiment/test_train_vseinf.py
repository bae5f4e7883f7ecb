"""The official VSE∞ network's (``"vseinf"``) data on tiny jitr_shapes with a tiny random
BERT folder: WordPiece captions, the training augmentation (never in evaluation), and the
one-line refusals of the ``text`` / ``image`` groups. A VSE∞ run trained and evaluated end
to end through the console scripts is tests/apps/test_import_vseinf.py's fine-tuning."""

import importlib.util
from pathlib import Path

import ml_collections
import numpy as np
import pytest

from configs import default
from jitr import experiment
from jitr.data import pairs
from jitr.data.shapes import tfds as shapes_tfds
from jitr.data.wordpiece import WordPiece, basic_words
from jitr.experiment.run_config import check_train_config
from jitr.experiment.train import train_augment
from tests.bert_folder import write_bert_folder
from tests.file_fixtures import write_precomp


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
  """``(data_dir, bert)``: tiny jitr_shapes built, and a BERT whose vocabulary holds the
  words of its captions."""
  root = tmp_path_factory.mktemp("vseinf")
  data_dir = root / "tfds"
  shapes_tfds.build(str(data_dir), "tiny", progress=False)
  words = set()
  for split in ("train", "val", "test"):
    arrays = shapes_tfds.load_split(split, data_dir=str(data_dir), config="tiny", images=False)
    words.update(w for caption in arrays["captions"] for w in basic_words(caption))
  return data_dir, write_bert_folder(root / "bert", words)


def vseinf_config(data_dir, bert) -> ml_collections.ConfigDict:
  """One epoch of 5 steps of 40 pairs, VSE∞'s augmentation and BERT learning-rate factor."""
  config = default.get_config()
  config.shapes_config = "tiny"
  config.data_dir = str(data_dir)
  config.graded.relevance = "oracle"
  config.loss = ml_collections.ConfigDict(
    {"triplet": {"weight": 1.0, "margin": 0.2, "mining": "sum"}}
  )
  config.model = ml_collections.ConfigDict(
    dict(name="vseinf", embed_dim=16, img_dim=128, bert_dropout=0.0)
  )
  config.text.pretrained = str(bert)
  config.text.word_augment = 0.2
  config.image.region_drop = 0.2
  config.optimizer.name = "adamw"
  config.optimizer.module_lr_factors = {"bert": 0.1}
  config.num_epochs = 1
  config.batch_size = BATCH
  config.token_buckets = ()  # one caption width: the train step compiles once
  config.log_every_steps = 1
  return config


BATCH = 40


def batches(split, augment, epoch=0):
  return list(
    pairs.epoch_batches(split, batch_size=BATCH, seed=0, epoch=epoch, buckets=(), augment=augment)
  )


def test_vseinf_reads_wordpiece_captions_and_augments_only_training_batches(folders):
  """(Training and evaluating a VSE∞ workdir end to end: the fine-tuning run of
  tests/apps/test_import_vseinf.py.)"""
  data_dir, bert = folders
  config = vseinf_config(data_dir, bert)
  tokenizer = WordPiece.from_vocab_file(bert / "vocab.txt")
  # the splits' tokens: [CLS] pieces [SEP], the WordPiece ids of each caption
  data = experiment.load_data(config, str(data_dir))
  captions = shapes_tfds.load_split("test", data_dir=str(data_dir), config="tiny", images=False)
  test = data.splits["test"]
  first = tokenizer.encode(captions["captions"][0])
  assert test.tokens[0, : test.lengths[0]].tolist() == first.tolist()
  assert first[0] == tokenizer.cls_id and first[-1] == tokenizer.sep_id
  train = data.splits["train"]
  assert (train.tokens[:, 0] == tokenizer.cls_id).all()
  assert (train.tokens[np.arange(train.num_captions), train.lengths - 1] == tokenizer.sep_id).all()
  # training batches: augmented, the same for the same (seed, epoch); the split untouched
  augment = train_augment(config, data)
  plain, augmented = batches(train, None), batches(train, augment)
  assert all(
    np.array_equal(a[k], b[k]) for a, b in zip(augmented, batches(train, augment)) for k in a
  )
  assert not np.array_equal(augmented[0]["tokens"], batches(train, augment, epoch=1)[0]["tokens"])
  changed = [
    not np.array_equal(p["tokens"][i], a["tokens"][i])
    for p, a in zip(plain, augmented)
    for i in range(BATCH)
  ]
  assert 10 <= sum(changed) <= 190, sum(changed)
  for p, a in zip(plain, augmented):
    assert (a["lengths"] <= p["lengths"]).all() and (a["tokens"][:, 0] == tokenizer.cls_id).all()
    assert (a["tokens"][np.arange(BATCH), a["lengths"] - 1] == tokenizer.sep_id).all()
    assert (a["image_mask"] <= p["image_mask"]).all()  # regions only dropped
    assert a["image_mask"].sum() < p["image_mask"].sum()
    assert a["image_mask"].any(axis=1).all()
  assert np.array_equal(plain[0]["tokens"], batches(train, None)[0]["tokens"])


@pytest.mark.parametrize(
  ("change", "message"),
  [
    (
      lambda c, b: setattr(c.text, "word_augment", 1.0),
      "config.text.word_augment: expected a probability in [0, 1), got 1.0",
    ),
    (
      lambda c, b: setattr(c.image, "region_drop", -0.1),
      "config.image.region_drop: expected a probability in [0, 1), got -0.1",
    ),
    (
      lambda c, b: setattr(c.text, "pretrained", ""),
      "config.text.pretrained: the 'vseinf' network needs a Hugging Face BERT folder; give "
      "--config.text.pretrained=FOLDER",
    ),
    (
      lambda c, b: setattr(c, "model", ml_collections.ConfigDict({"name": "vse"})),
      "config.text.pretrained: only the 'vseinf' network reads WordPiece captions and a "
      "BERT; config.model.name is 'vse'",
    ),
    (
      lambda c, b: (b / "vocab.txt").unlink(),
      "config.text.pretrained: {bert} holds no vocab.txt; expected a Hugging Face BERT "
      "folder (config.json, vocab.txt, the weights)",
    ),
    (
      lambda c, b: (b / "config.json").unlink(),
      "config.text.pretrained: {bert} holds no config.json; expected a Hugging Face BERT "
      "folder (config.json, vocab.txt, the weights)",
    ),
    (
      lambda c, b: setattr(c.model, "pretrained", str(b)),
      "config.model.pretrained: not a run setting; give the BERT folder as "
      "--config.text.pretrained=FOLDER (its vocab.txt also tokenises the captions)",
    ),
  ],
)
def test_text_and_image_groups_are_checked_in_one_line(tmp_path, change, message):
  bert = write_bert_folder(tmp_path / "bert", ["red"])
  config = vseinf_config(tmp_path / "tfds", bert)
  check_train_config(config)
  change(config, bert)
  with pytest.raises(ValueError) as err:
    check_train_config(config)
  assert str(err.value) == message.format(bert=bert)


def test_word_augment_needs_a_bert_folder():
  config = default.get_config()
  config.text.word_augment = 0.2
  with pytest.raises(ValueError, match=r"^config.text.word_augment: needs config.text.pretrained"):
    check_train_config(config)


def test_precomp_captions_are_wordpiece_with_text_pretrained(tmp_path):
  """A ``*_precomp`` folder's captions: ``[CLS]`` pieces ``[SEP]``, cut to
  ``max_caption_len`` with ``[SEP]`` last; the training captions' words kept for the
  augmentation."""
  write_precomp(tmp_path / "precomp", 4, n_eval=2)
  config = default.get_config()
  config.dataset = "f30k_precomp"
  config.precomp_root = str(tmp_path / "precomp")
  config.graded = ml_collections.ConfigDict({})
  config.model = ml_collections.ConfigDict({"name": "vseinf"})
  config.text.pretrained = str(write_bert_folder(tmp_path / "bert", ["man", "dog"]))
  config.text.word_augment = 0.2
  config.max_caption_len = 6
  data = experiment.load_data(config, str(tmp_path / "data"))
  tokenizer = data.vocab.tokenizer
  captions = (tmp_path / "precomp" / "f30k_precomp" / "train_caps.txt").read_text().splitlines()
  train = data.splits["train"]
  for i, caption in enumerate(captions):
    ids = tokenizer.encode(caption)
    want = ids if len(ids) <= 6 else [*ids[:5], tokenizer.sep_id]
    assert train.tokens[i, : train.lengths[i]].tolist() == list(want)
  assert len(data.train_words) == len(captions) == 20
  assert [w.tolist() for w in data.train_words.of(0)] == [
    w.tolist() for w in tokenizer.word_ids(captions[0])
  ]


CHUNKED_CONFIG = """
from tests.experiment.test_train_vseinf import vseinf_config


def get_config():
  config = vseinf_config({data_dir!r}, {bert!r})
  config.batch_size = 32  # 8 devices × 2 chunks of 2 pairs
  config.token_buckets = (16, 48)  # the plain batches: 48; the short chunk 16 (a compile or two)
  return config
"""


def _bench():
  spec = importlib.util.spec_from_file_location(
    "bench_token_chunks", Path(__file__).parents[2] / "scripts" / "bench_token_chunks.py"
  )
  bench = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(bench)
  return bench


def test_chunks_cut_the_tiny_runs_batches_shorter(folders):
  """``scripts/bench_token_chunks.py``'s host side on tiny jitr_shapes' WordPiece captions
  (4 to 35 ids): 2 chunks on each of 8 devices pad a caption to fewer ids than one width,
  every batch counted once."""
  data_dir, bert = folders
  config = vseinf_config(data_dir, bert)
  train = experiment.load_data(config, str(data_dir), teachers=False).splits["train"]
  kw = dict(batch_size=32, shards=8, buckets=(16, 48), batches=5)
  (one, one_tuples), (two, two_tuples) = (
    _bench().padded_widths(train, chunks=k, **kw) for k in (1, 2)
  )
  assert one == 48 and set(one_tuples) == {(48,)}  # every batch holds a caption over 16
  assert two < one and sum(two_tuples.values()) == 5
  assert all(a <= b for a, b in two_tuples)  # sorted: the second chunk is the longer


@pytest.mark.full
def test_bench_token_chunks_measures_the_runs_batches_in_chunks(folders, tmp_path, capsys):
  """``scripts/bench_token_chunks.py`` end to end: the chunked batches' mean width is below
  the one width's, each row is measured, the first is the baseline."""
  data_dir, bert = folders
  config_file = tmp_path / "tiny_vseinf.py"
  config_file.write_text(CHUNKED_CONFIG.format(data_dir=str(data_dir), bert=str(bert)))
  _bench().main([f"--config={config_file}", "--chunks=1,2", "--steps=1", "--batches=5"])
  lines = capsys.readouterr().out.splitlines()
  assert lines[2].startswith("| token_chunks | mean padded width | width tuples | step (s) |")
  one, two = (line.strip("|").split("|") for line in lines[4:6])
  assert [one[0].strip(), two[0].strip(), one[6].strip(), one[7].strip()] == [
    "1",
    "2",
    "1.00×",
    "1.00×",
  ]
  assert float(two[1]) < float(one[1])  # sorted chunks are cut shorter
  assert all(float(row[3]) > 0 and float(row[5]) > 0 for row in (one, two))
