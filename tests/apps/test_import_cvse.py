"""``jitr-import`` of an official CVSE checkpoint, written as the official ``train_f30k.py``
saves it (a legacy ``torch.save`` of its 8 state dicts, ``opt`` an ``argparse.Namespace``)
with concept files in the official formats: docs/models.md's "Use an official CVSE
checkpoint" commands run as written (with the WordNet of tests/data_folders.py), and
``jitr-eval --protocol=official`` gives the numbers of the official evaluation procedure
(``evalrank``: each caption's own concept labels, ``label_complete``, the second encoding,
``i2t_sep_sim`` / ``t2i_sep_sim`` in float64) run on the PyTorch transcription of the
official modules with the same weights, on the word ids and concept labels the official
``data.py`` computes (tests/nltk_reference.py: nltk's tokenizer and WordNet lemmatiser on
the captions' Python 3 ``str(bytes)``)."""

from __future__ import annotations

import argparse
import json
import pathlib
import pickle
import re
import shlex
import shutil
import sys

import numpy as np
import pytest

from jitr.data import precomp
from jitr.data import vocab as vocab_lib
from jitr.data.official_vocab import read_official_vocab
from jitr.models.cvse.graph import concept_adjacency
from tests.apps.test_import_official import TINY_RUN, console, pickled_vocab, save_legacy
from tests.data_folders import wordnet_folder
from tests.file_fixtures import write_precomp
from tests.models.test_cvse_completion import (
  official_complete,
  official_i2t_sep_sim,
  official_label_complete,
  official_t2i_sep_sim,
)
from tests.nltk_reference import nltk_data, official_item, official_name_concepts
from tests.rank_gaps import assert_recall_within_ties, owner_of

torch = pytest.importorskip("torch")

REPO = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "models"))
import cvse_reference  # noqa: E402

pytestmark = pytest.mark.slow

CONCEPTS = ("dog", "cat", "red", "blue", "grass", "mat")  # words of write_precomp's captions
DIMS = dict(img_dim=2048, word_dim=8, embed_size=16, num_region=36, concept_dim=4)
# the test split's captions (4 images): plurals, capitals, punctuation, 's, a hyphen, quotes
TEST_CAPTIONS = [
  "Two Dogs run on the grass .", "A red cat sits on a mat", "dogs' mats are blue.",
  "The dog's red ball", "A blue-eyed cat .", "Cats sit on mats .", "A dog runs",
  'A sign says "Cat"', "Mr. Smith's dog", "grass", "Red cats on the grass", "A dog ; a cat .",
  "blue mats and red mats", "The dogs run.", "A cat", "Two men's dogs on a mat",
  "A red dog . A blue cat .", "Grass, dogs and cats", "a cat sits", "Boys with dogs on grass",
]  # fmt: skip
WORDNET_ARG = "--config.concepts.wordnet=/usr/share/wordnet"  # as docs/models.md writes it


def documented_commands() -> list[list[str]]:
  """docs/models.md's "Use an official CVSE checkpoint" commands, split as a shell would."""
  page = (REPO / "docs" / "models.md").read_text(encoding="utf-8")
  after = page.split("### Use an official CVSE checkpoint", 1)[1]
  section = re.split(r"\n#{2,3} ", after, maxsplit=1)[0]
  (block,) = re.findall(r"```bash\n(.*?)```", section, re.S)
  return [shlex.split(line, comments=True) for line in block.replace("\\\n", " ").splitlines()]


def write_concept_files(folder: pathlib.Path, n_images: int) -> tuple[np.ndarray, np.ndarray]:
  """CVSE's five F30K concept files for :data:`CONCEPTS`; returns ``(nums, adj_all)``."""
  folder.mkdir(parents=True)
  rng = np.random.default_rng(4)
  c = len(CONCEPTS)
  co = rng.integers(0, 9, (c, c))
  co = (np.triu(co, 1) + np.triu(co, 1).T).astype(np.int32)
  nums = (co.max(axis=1) + rng.integers(1, 5, c)).astype(np.int32)
  stats = {"nums": nums, "adj_O_P": co, "adj_O_M": co, "adj_all": co}
  (folder / "f30k_adj_concepts.pkl").write_bytes(pickle.dumps(stats))
  vectors = rng.normal(size=(c, DIMS["concept_dim"]))  # float64, as the GloVe pickle
  (folder / "f30k_concepts_glove_word2vec.pkl").write_bytes(pickle.dumps(vectors))
  vocab = {"words": list(CONCEPTS), "counts": nums.tolist(), "poss": ["OBJ"] * c}
  (folder / "vocab_f30k_concepts.pkl").write_bytes(pickle.dumps(vocab))
  (folder / "category_concepts.json").write_text(json.dumps({w: i for i, w in enumerate(CONCEPTS)}))
  labels = [{"img_id": str(i), "concept_labels": [i % c]} for i in range(n_images)]
  (folder / "all_f30k_concept_label.json").write_text(json.dumps(labels))
  return nums, co


def reference_model(n_words: int, nums: np.ndarray, co: np.ndarray) -> cvse_reference.CVSE:
  """The official modules at tiny sizes, every weight and running statistic random."""
  torch.manual_seed(0)
  rng = np.random.default_rng(5)
  adj_all = torch.tensor(concept_adjacency(co, nums), dtype=torch.float32)  # gen_A_concept
  ref = cvse_reference.CVSE(
    n_words, DIMS["img_dim"], DIMS["word_dim"], DIMS["embed_size"], DIMS["num_region"],
    DIMS["concept_dim"], adj_all, dropout_rate=0.4,
  )  # fmt: skip
  cvse_reference.randomize(ref, rng, weight_scale=0.3)
  return ref


@pytest.fixture(scope="module")
def reference_nltk(tmp_path_factory):
  """nltk's tokenizer and WordNet lemmatiser, read from a data folder (the official code's)."""
  with nltk_data(tmp_path_factory.mktemp("nltk_data"), wordnet_folder()):
    yield


@pytest.fixture(scope="module")
def official(tmp_path_factory):
  """``configs/``, ``data/`` (a generated f30k_precomp, its test captions
  :data:`TEST_CAPTIONS`), ``official/`` (the CVSE checkpoint, a pickled vocabulary of the
  nltk words of the train and test captions, the concept files); returns ``(root,
  reference model)``."""
  root = tmp_path_factory.mktemp("official_cvse")
  shutil.copytree(REPO / "configs", root / "configs")
  folder = write_precomp(root / "data", n_images=20)
  (folder / "test_caps.txt").write_text("\n".join(TEST_CAPTIONS) + "\n")
  captions = [*precomp.read_captions(str(folder / "train_caps.txt")), *TEST_CAPTIONS]
  words = vocab_lib.build_vocab(captions, tokenizer=vocab_lib.NLTK).words
  nums, co = write_concept_files(root / "official" / "f30k_annotations", 28)
  ref = reference_model(len(words), nums, co)
  opt = argparse.Namespace(
    data_name="f30k_precomp", embed_size=16, word_dim=8, img_dim=2048, vocab_size=len(words),
    num_attribute=len(CONCEPTS), input_channel=DIMS["concept_dim"], Concept_label_ratio=0.35,
  )  # fmt: skip
  parts = [
    ref.img_enc, ref.txt_enc, ref.V_self_atten_enhance, ref.T_self_atten_enhance,
    ref.V_consensus_level_embedding, ref.T_consensus_level_embedding, ref.C_GCN,
    ref.Multi_feature_fusing,
  ]  # fmt: skip
  save_legacy(root / "official" / "CVSE" / "model_best.pth.tar", parts, opt)
  pickled_vocab(root / "official" / "f30k_precomp_vocab.pkl", words)
  return root, ref


def official_inputs(root: pathlib.Path) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
  """``(word ids [N, L], lengths [N], concept labels [N, C])`` of the test captions, as
  the official ``__getitem__`` computes them (tests/nltk_reference.py) from the caption
  file's bytes, the pickled vocabulary and ``category_concepts.json``."""
  words = read_official_vocab(root / "official" / "f30k_precomp_vocab.pkl").words
  word2idx = {w: i for i, w in enumerate(words)}
  categories = json.loads(
    (root / "official" / "f30k_annotations" / "category_concepts.json").read_text()
  )
  name_concepts = official_name_concepts(categories)
  lines = (root / "data" / "f30k_precomp" / "test_caps.txt").read_bytes().split(b"\n")[:-1]
  items = [official_item(line.strip(), word2idx, name_concepts, len(categories)) for line in lines]
  lengths = np.array([len(ids) for ids, _ in items])
  tokens = np.zeros((len(items), lengths.max()), np.int64)
  for row, (ids, _) in zip(tokens, items):
    row[: len(ids)] = ids
  return tokens, lengths, np.array([labels for _, labels in items])


def official_numbers(ref, workdir: pathlib.Path, inputs) -> tuple[tuple, tuple]:
  """``evalrank`` on the test split with the reference modules and the official ``inputs``
  (:func:`official_inputs`): ``((r1, r5, r10, medr, meanr)`` both ways, the fused
  similarity matrix ``[images, captions]`` they rank``)``."""
  from jitr import experiment
  from jitr.experiment.workdir import data_dir, read_trained_config

  config = read_trained_config(str(workdir))
  test = experiment.load_data(config, data_dir(config, str(workdir)), teachers=False).splits["test"]
  tokens, lengths, own = inputs
  owner = np.asarray(test.caption_image)
  vectors = pickle.loads(
    (workdir.parent.parent / "official" / "f30k_annotations" / "f30k_concepts_glove_word2vec.pkl")
    .read_bytes()
  )  # fmt: skip

  def encode(labels):  # encode_data: one row per caption, its image repeated, in float64
    order = np.argsort(-lengths, kind="stable")  # the official collate_fn's order
    ref.eval()
    with torch.no_grad():
      v, t, _, _ = ref.forward_emb(
        torch.tensor(np.asarray(test.images, np.float32)[owner[order]]),
        torch.tensor(tokens[order, : lengths.max()]),
        torch.tensor(labels[order]),
        torch.tensor(np.broadcast_to(vectors, (len(order), *vectors.shape)).astype(np.float32)),
        lengths[order].tolist(),
        0.85,  # evalrank's fuse_weight for f30k
      )
    back = np.argsort(order)
    return [x.numpy()[back].astype(np.float64) for x in (v[2], t[2], v[1], t[1])]

  img_f, cap_f, _, _ = encode(own)
  completed = official_complete(own, official_label_complete(img_f, cap_f, "f30k"))
  img_f, cap_f, img_c, cap_c = encode(completed)
  out = []
  for sep_sim in (official_i2t_sep_sim, official_t2i_sep_sim):
    recalls, ranks = sep_sim(img_f, cap_f, img_c, cap_c, 0.95)
    out.append((*recalls, np.floor(np.median(ranks)) + 1, ranks.mean() + 1))  # medr, meanr
  fused = 0.95 * img_f[::5] @ cap_f.T + 0.05 * img_c[::5] @ cap_c.T  # what sep_sim ranks
  return tuple(out), fused


def test_the_documented_commands_import_and_evaluate_with_the_official_numbers(
  official, reference_nltk
):
  root, ref = official
  commands = documented_commands()
  assert [c[0] for c in commands] == ["jitr-import", "jitr-eval"]
  assert WORDNET_ARG in commands[0] and "--protocol=official" in commands[1]
  wordnet = wordnet_folder()
  for command in commands:
    extra = TINY_RUN if command[0] == "jitr-import" else []
    command = [f"--config.concepts.wordnet={wordnet}" if a == WORDNET_ARG else a for a in command]
    done = console(*command, *extra, cwd=root)
    assert done.returncode == 0, (command, done.stderr[-3000:])
  workdir = root / "workdirs" / "official_cvse"
  record = json.loads((workdir / "import.json").read_text())
  assert record["network"] == "cvse" and record["best_rsum"] == 321.5
  config = json.loads((workdir / "config.json").read_text())
  assert config["model"]["name"] == "cvse" and config["model"]["embed_dim"] == 16
  assert config["concepts"]["source"] == str(root / "official" / "f30k_annotations")
  assert (config["concepts"]["labels"], config["concepts"]["wordnet"]) == ("official", str(wordnet))
  assert (config["text"]["tokenizer"], config["text"]["caption_form"]) == ("nltk", "python3_bytes")
  pins = json.loads((workdir / "inputs.json").read_text())["inputs"]
  assert {"config.concepts.wordnet/index.noun", "config.concepts.wordnet/noun.exc"} <= set(pins)
  # Debian's WordNet 3.0 is verified by content; the test's concept files are no official ones
  assert pins["config.concepts.wordnet/index.noun"]["verified"] == (
    "WordNet 3.0 (Debian's wordnet-base): index.noun"
  )
  assert pins["config.concepts.source/f30k_adj_concepts.pkl"]["verified"] == "none"
  # jitr's inputs are the official data.py's: the ids of str(bytes), the WordNet labels
  from jitr import experiment
  from jitr.experiment.workdir import data_dir, read_trained_config

  saved = read_trained_config(str(workdir))
  test = experiment.load_data(saved, data_dir(saved, str(workdir)), teachers=False).splits["test"]
  inputs = official_inputs(root)
  tokens, lengths, own = inputs
  np.testing.assert_array_equal(test.lengths, lengths)
  np.testing.assert_array_equal(np.asarray(test.tokens)[:, : lengths.max()], tokens)
  np.testing.assert_array_equal(test.caption_concept_labels, own)
  assert own.any() and (own.sum(axis=0) > 0).sum() >= 5
  report = json.loads((workdir / "eval_test_official" / "metrics.json").read_text())
  names = ("R@1", "R@5", "R@10", "medr", "meanr")
  got = [report[f"full/{d}/{m}"] for d in ("i2t", "t2i") for m in names]
  (i2t, t2i), fused = official_numbers(ref, workdir, inputs)
  assert assert_recall_within_ties(report, fused, owner_of(fused), eps=1e-5) == 0  # no tie
  assert got == [*i2t, *t2i]
  # beside CVSE's README row: jitr-tables --imported=1=WORKDIR reads this report back
  from jitr.papers import actions as table_actions

  options = table_actions.Options(
    table="cvse.readme.f30k", runs=str(root / "papers"), seeds=1, imported=(f"1={workdir}",)
  )
  table_actions.reproduce("report", options)
  row = json.loads((root / "papers" / "tables" / "cvse.readme.f30k.json").read_text())["rows"][0]
  assert row["official_checkpoint"] and row["scored_seeds"] == 0
  cells = row["metrics"]
  assert cells["i2t/R@1"]["official_checkpoint"] == round(report["full/i2t/R@1"], 4)
  assert cells["mR"]["official_checkpoint"] == round(report["full/rsum"] / 6, 4)
  assert cells["mR"]["official_difference"] == round(report["full/rsum"] / 6 - 80.4, 4)
  # the concept files are pinned: changed after the import, jitr-eval refuses them
  from jitr.experiment import evaluate_workdir
  from jitr.experiment.pinned_inputs import ChangedInputError

  vectors = root / "official" / "f30k_annotations" / "f30k_concepts_glove_word2vec.pkl"
  kept = vectors.read_bytes()
  try:
    changed = pickle.loads(kept)
    vectors.write_bytes(pickle.dumps(changed * 2))  # the same shape, other vectors
    with pytest.raises(ChangedInputError) as err:
      evaluate_workdir(str(workdir), split="test")
    assert str(err.value).startswith(
      f"{vectors}: changed since {workdir / 'inputs.json'} pinned it as "
      "config.concepts.source/f30k_concepts_glove_word2vec.pkl"
    )
  finally:
    vectors.write_bytes(kept)


def test_concepts_of_another_graph_or_width_are_refused(official, tmp_path):
  """The import's check (run before anything is written): the given concept files must
  hold the checkpoint's graph and vectors of the width its GCN takes."""
  from configs import paper
  from jitr.experiment.official_import import check_concept_graph, read_official_weights
  from jitr.experiment.run_concepts import concept_inputs, official_concept_data

  root, _ = official
  weights = read_official_weights(root / "official" / "CVSE" / "model_best.pth.tar")
  config = paper.get_config("f30k,cvse,triplet")
  captions = [["a dog on grass", "a red cat"]] * 3

  def concepts(folder):
    data, _ = official_concept_data(str(folder), "f30k", captions, [0, 1])
    return concept_inputs(data)

  same = root / "official" / "f30k_annotations"
  check_concept_graph(config, weights, concepts(same))  # the checkpoint's own: accepted
  other = tmp_path / "other"
  shutil.copytree(same, other)
  stats = pickle.loads((other / "f30k_adj_concepts.pkl").read_bytes())
  stats["adj_all"] = stats["adj_all"] * 0 + 1  # every pair co-occurs once
  (other / "f30k_adj_concepts.pkl").write_bytes(pickle.dumps(stats))
  config.concepts.source = str(other)
  with pytest.raises(ValueError, match=r"the concept graph of .*other differs from the "):
    check_concept_graph(config, weights, concepts(other))
  vectors = np.zeros((len(CONCEPTS), 7))
  (other / "f30k_concepts_glove_word2vec.pkl").write_bytes(pickle.dumps(vectors))
  with pytest.raises(ValueError, match=r"6 concepts of 7-d vectors, the checkpoint's GCN 6 of 4-d"):
    check_concept_graph(config, weights, concepts(other))
