"""``jitr-import`` of official VSE∞ checkpoints, written as woodfrog/vse_infty's ``train.py``
writes them (``model`` = the ``nn.DataParallel`` towers' state dicts, every key
``module.``-prefixed, a full ``BertModel`` with its pooler and ``position_ids`` buffer
inside the text tower, ``opt`` an ``argparse.Namespace``), zip and legacy: docs/models.md's
"Use an official VSE∞ checkpoint" commands run as written, and ``jitr-eval
--protocol=official`` equals ``evalrank``'s numbers computed by the official towers
transcribed in PyTorch on the same test captions, tokenised by transformers' Python
``BertTokenizer`` as the official ``PrecompRegionDataset`` does (captions with
punctuation, hyphens, ``'s``, accents and characters outside the vocabulary)."""

from __future__ import annotations

import argparse
import hashlib
import json
import pathlib
import re
import shlex
import shutil

import numpy as np
import pytest

from jitr.data.wordpiece import basic_words
from tests.apps.test_import_official import console, jitr_similarity
from tests.bert_folder import write_bert_folder
from tests.data.wordpiece_cases import legacy_bert, official_ids
from tests.evaluation.test_official import reference_i2t, reference_t2i
from tests.file_fixtures import write_precomp
from tests.rank_gaps import assert_recall_within_ties, owner_of

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from tests.models import vseinf_reference as ref  # noqa: E402

pytestmark = pytest.mark.slow

REPO = pathlib.Path(__file__).resolve().parents[2]
EMBED, HIDDEN = 16, 16
N_TEST = 10
# test captions as real ones read: punctuation, hyphens, 's, accents, a character no
# vocabulary has ([UNK]), upper case
CAPTIONS = (
  "A man in a red-and-white shirt rides a bike .",
  "Two dogs play on the grass; one's brown.",
  "A café with people sitting outside, near the street.",
  "The girl's naïve smile ☃ at the camera!",
  "Children (three of them) jump into a pool.",
)
TINY_RUN = [
  "--config.graded={}",
  "--config.loss={'triplet': {'weight': 1.0, 'margin': 0.2}}",
  "--config.batch_size=16",
  "--config.eval_batch_size=16",
  "--config.log_every_steps=2",
  "--config.compilation_cache=False",
  "--config.token_buckets=()",
]


def documented_commands() -> list[list[str]]:
  """docs/models.md's "Use an official VSE∞ checkpoint" commands, split as the shell would."""
  page = (REPO / "docs" / "models.md").read_text(encoding="utf-8")
  after = page.split("#### Use an official VSE∞ checkpoint", 1)[1]
  section = re.split(r"\n#{2,4} ", after, maxsplit=1)[0]
  (block,) = re.findall(r"```bash\n(.*?)```", section, re.S)
  return [shlex.split(line, comments=True) for line in block.replace("\\\n", " ").splitlines()]


def official_towers(vocab_size: int, seed: int):
  """The official image and text towers at the test's sizes, random weights, the image
  MLP's BatchNorm statistics and affine moved away from their starting values."""
  torch.manual_seed(seed)
  img = ref.EncoderImageAggr(2048, EMBED)
  bert_config = transformers.BertConfig(
    vocab_size=vocab_size,
    hidden_size=HIDDEN,
    num_hidden_layers=1,
    num_attention_heads=2,
    intermediate_size=2 * HIDDEN,
    max_position_embeddings=64,
  )
  txt = ref.EncoderText(EMBED, transformers.BertModel(bert_config))  # with its pooler
  with torch.no_grad():
    for bn in img.mlp.bns:
      bn.running_mean.normal_(0.0, 0.5)
      bn.running_var.uniform_(0.5, 2.0)
      bn.weight.normal_(1.0, 0.3)
      bn.bias.normal_(0.0, 0.3)
  return img, txt


def data_parallel_state(tower) -> dict:
  """``nn.DataParallel(tower).state_dict()``: every key ``module.``-prefixed; the BERT's
  ``position_ids`` buffer as the transformers of the official runs saved it."""
  state = {f"module.{k}": v for k, v in tower.state_dict().items()}
  if hasattr(tower, "bert"):
    state["module.bert.embeddings.position_ids"] = torch.arange(64)[None]
  return state


def save_checkpoint(path: pathlib.Path, towers, *, legacy: bool, **opt) -> None:
  """What the official ``train.py``'s ``save_checkpoint`` writes."""
  path.parent.mkdir(parents=True, exist_ok=True)
  options = dict(
    data_name="f30k", embed_size=EMBED, img_dim=2048, precomp_enc_type="basic",
    no_imgnorm=False, no_txtnorm=False, margin=0.2, max_violation=False,
  )  # fmt: skip
  checkpoint = {
    "epoch": 25,
    "model": [data_parallel_state(t) for t in towers],
    "best_rsum": 512.25,
    "opt": argparse.Namespace(**{**options, **opt}),
    "Eiters": 5678,
  }
  torch.save(checkpoint, path, _use_new_zipfile_serialization=not legacy)


@pytest.fixture(scope="module")
def official(tmp_path_factory):
  """``configs/``, ``data/f30k_precomp`` (the test split's captions those of
  :data:`CAPTIONS`), ``bert-base-uncased/`` (a tiny random BERT whose vocabulary lacks
  some caption words: they split into letters) and ``official/``: a legacy and a zip
  checkpoint of two towers; returns ``(root, {name: towers})``."""
  root = tmp_path_factory.mktemp("official_vseinf")
  shutil.copytree(REPO / "configs", root / "configs")
  folder = write_precomp(root / "data", n_images=20, n_eval=N_TEST)
  test = [f"{i}. {CAPTIONS[i % len(CAPTIONS)]}" for i in range(5 * N_TEST)]
  (folder / "test_caps.txt").write_text("\n".join(test) + "\n", encoding="utf-8")
  lines = [(folder / f"{n}_caps.txt").read_text().splitlines() for n in ("train", "dev")]
  words = {w for captions in lines for c in captions for w in basic_words(c)}
  words |= {"man", "red", "shirt", "-", ".", ",", "'", "s", "dogs", "the", "cafe"}
  # the digits, so that every test caption ("2. …", "12. …") has ids of its own: two
  # captions with the same ids tie exactly, and a tie's order is float rounding's
  words |= {*"0123456789", *(f"##{d}" for d in "0123456789")}
  bert = write_bert_folder(root / "bert-base-uncased", words, hidden=HIDDEN)
  tokenizer = legacy_bert(bert / "vocab.txt")
  assert len({tuple(official_ids(tokenizer, c)) for c in test}) == len(test)
  vocab_size = len((bert / "vocab.txt").read_text().splitlines())
  towers = {}
  for name, legacy, seed in (("f30k_butd_region_bert", False, 0), ("legacy", True, 1)):
    towers[name] = official_towers(vocab_size, seed)
    save_checkpoint(root / "official" / name / "model_best.pth", towers[name], legacy=legacy)
  return root, towers


def official_sims(towers, root: pathlib.Path) -> np.ndarray:
  """The official ``evalrank(split='test')``'s similarity matrix of ``towers``:
  ``encode_data`` (eval mode, float64 copies), ``compute_sim``."""
  img_enc, txt_enc = towers
  img_enc.eval(), txt_enc.eval()
  folder = root / "data" / "f30k_precomp"
  images = torch.from_numpy(np.load(folder / "test_ims.npy"))
  captions = (folder / "test_caps.txt").read_text(encoding="utf-8").splitlines()
  tokenizer = legacy_bert(root / "bert-base-uncased" / "vocab.txt")
  ids = [official_ids(tokenizer, c) for c in captions]
  tokens = torch.zeros(len(ids), max(map(len, ids)), dtype=torch.long)
  for i, seq in enumerate(ids):
    tokens[i, : len(seq)] = torch.tensor(seq)
  with torch.no_grad():
    img = img_enc(images, torch.full((len(images),), images.shape[1])).numpy()
    cap = txt_enc(tokens, torch.tensor([len(s) for s in ids])).numpy()
  return np.matmul(img.astype(np.float64), cap.astype(np.float64).T)


def evalrank(towers, root: pathlib.Path) -> dict[str, float]:
  """The official ``evalrank(split='test')`` numbers: ``i2t`` / ``t2i`` of
  :func:`official_sims`."""
  sims = official_sims(towers, root)
  names = [f"full/{d}/{m}" for d in ("i2t", "t2i") for m in ("R@1", "R@5", "R@10", "medr", "meanr")]
  return dict(zip(names, reference_i2t(sims) + reference_t2i(sims)))


def test_the_documented_commands_import_evaluate_and_fine_tune(official):
  root, towers = official
  commands = documented_commands()
  assert [c[0] for c in commands] == ["jitr-import", "jitr-eval", "jitr-train"]
  bert = root / "bert-base-uncased"
  # a generated BERT folder: no published SHA-256 of it is known, so each run says so
  note = (
    "note: not verified (jitr knows no published SHA-256 of them; inputs.json pins them as "
    f"found): {bert / 'config.json'}, {bert / 'model.safetensors'}, {bert / 'vocab.txt'}; "
    "check each against its published SHA-256 with --input_sha256=FILE=SHA256 (jitr-train, "
    "jitr-import)"
  )
  for command in commands:
    extra = [] if command[0] == "jitr-eval" else TINY_RUN
    if command[0] == "jitr-train":
      extra = [*TINY_RUN, "--config.num_epochs=1", f"--config.model.embed_dim={EMBED}"]
    done = console(*command, *extra, cwd=root)
    assert done.returncode == 0, (command, done.stderr[-3000:])
    said = done.stdout if command[0] == "jitr-import" else done.stderr  # printed / logged
    assert sum(line.endswith(note) for line in said.splitlines()) == 1, (command, said[-3000:])
  imported = root / "workdirs" / "official_vseinf"
  record = json.loads((imported / "import.json").read_text())
  assert (record["network"], record["epoch"], record["best_rsum"]) == ("vseinf", 25, 512.25)
  assert record["opt"]["data_name"] == "f30k"
  saved = json.loads((imported / "config.json").read_text())
  assert saved["model"]["embed_dim"] == EMBED and saved["vocab_file"] == ""
  assert saved["text"]["pretrained"] == str(root / "bert-base-uncased")
  got = json.loads((imported / "eval_test_official" / "metrics.json").read_text())
  want = evalrank(towers["f30k_butd_region_bert"], root)
  assert {k: got[k] for k in want} == want
  assert 0 < want["full/i2t/R@1"] < 100 and want["full/t2i/meanr"] > 1
  sims = official_sims(towers["f30k_butd_region_bert"], root)
  assert assert_recall_within_ties(got, sims, owner_of(sims), eps=1e-5) == 0  # no tie decides
  np.testing.assert_allclose(jitr_similarity(imported), sims, atol=2e-6)
  # the fine-tuned VSE∞ run: its vocabulary is the BERT folder's, and jitr-eval reads the
  # workdir's config.json and tokenises the same way: the same numbers as the run's own
  tuned_dir = root / "workdirs" / "vseinf_sndcg"
  tuned = json.loads((tuned_dir / "config.json").read_text())
  assert tuned["init_from"] == str(imported)
  assert (tuned["text"]["word_augment"], tuned["image"]["region_drop"]) == (0.2, 0.2)
  vocab = json.loads((tuned_dir / "vocab.json").read_text())
  words = bert / "vocab.txt"
  assert vocab["words"] == words.read_text().splitlines()
  assert vocab["wordpiece"]["sha256"] == hashlib.sha256(words.read_bytes()).hexdigest()
  pins = json.loads((tuned_dir / "inputs.json").read_text())["inputs"]
  assert pins["config.text.pretrained/model.safetensors"]["verified"] == "none"
  from jitr.experiment import evaluate_workdir

  metrics = json.loads((tuned_dir / "metrics.json").read_text())
  again = evaluate_workdir(str(tuned_dir), split="test")
  assert again["full/rsum"] == pytest.approx(metrics["full/rsum"], abs=1e-6)


def test_a_legacy_checkpoint_imports_and_scores_as_evalrank(official, tmp_path):
  from jitr.experiment.evaluate import evaluate_workdir
  from jitr.experiment.official_import import import_official

  root, towers = official
  config = vseinf_config(root)
  record = import_official(
    config, root / "official" / "legacy" / "model_best.pth", None, tmp_path / "w", progress=False
  )
  assert record["vocab_file"] == str(root / "bert-base-uncased" / "vocab.txt")
  got = evaluate_workdir(str(tmp_path / "w"), split="test", protocol="official")
  want = evalrank(towers["legacy"], root)
  assert {k: got[k] for k in want} == want
  sims = official_sims(towers["legacy"], root)
  assert assert_recall_within_ties(got, sims, owner_of(sims), eps=1e-5) == 0  # no tie decides


def vseinf_config(root: pathlib.Path, spec: str = "f30k,vseinf,triplet", *, bert: bool = True):
  """The paper config of ``spec`` with the test's data, BERT folder (when ``bert``) and
  tiny run."""
  from configs import paper

  config = paper.get_config(spec)
  config.text.pretrained = str(root / "bert-base-uncased") if bert else ""
  config.precomp_root = str(root / "data")
  config.graded = {}
  config.loss = {"triplet": {"weight": 1.0, "margin": 0.2}}
  config.batch_size = config.eval_batch_size = 16
  config.token_buckets = ()
  config.compilation_cache = False
  return config


def _other_bert(root: pathlib.Path, tmp_path: pathlib.Path) -> pathlib.Path:
  """A copy of the BERT folder with 2 layers instead of the checkpoint's 1."""
  words = (root / "bert-base-uncased" / "vocab.txt").read_text().splitlines()
  return write_bert_folder(tmp_path / "bert2", words[5:-52], hidden=HIDDEN, layers=2)


@pytest.mark.parametrize(
  ("change", "message"),
  [
    (
      lambda config, root, tmp: vseinf_config(root, "f30k,vseinf_bigru,triplet", bert=False),
      "config.model.name='vse', but the checkpoint holds VSEINF: use a config of that "
      "network (e.g. configs/paper.py:DATA,vseinf,LOSS)",
    ),
    (
      lambda config, root, tmp: setattr(config.text, "pretrained", str(_other_bert(root, tmp))),
      "config.text.pretrained: the BERT of {tmp}/bert2 has num_hidden_layers 2, the "
      "checkpoint's 1: use the BERT folder it was trained from (bert-base-uncased for the "
      "official VSE∞ models)",
    ),
    (
      lambda config, root, tmp: setattr(config, "dataset", "coco_precomp"),
      "the checkpoint's opt disagrees: opt.data_name='f30k', but config.dataset='coco_precomp'",
    ),
  ],
)
def test_a_bad_import_is_one_line_and_writes_nothing(official, tmp_path, change, message):
  from jitr.experiment.official_import import import_official

  root, _ = official
  config = vseinf_config(root)
  config = change(config, root, tmp_path) or config
  with pytest.raises(ValueError) as err:
    checkpoint = root / "official" / "legacy" / "model_best.pth"
    import_official(config, checkpoint, None, tmp_path / "w", progress=False)
  assert str(err.value) == message.format(tmp=tmp_path)
  assert not (tmp_path / "w").exists()


def test_a_backbone_checkpoint_and_a_foreign_vocab_are_refused(official, tmp_path):
  from jitr.experiment.official_import import import_official

  root, towers = official
  path = tmp_path / "grid" / "model_best.pth"
  save_checkpoint(path, towers["legacy"], legacy=True, precomp_enc_type="backbone")
  with pytest.raises(ValueError) as err:
    import_official(vseinf_config(root), path, None, tmp_path / "w", progress=False)
  assert str(err.value) == (
    "the checkpoint's opt disagrees: opt.precomp_enc_type='backbone', but jitr's vseinf "
    "takes precomputed region features (the official 'basic' image encoder)"
  )
  vocab = tmp_path / "vocab.txt"
  vocab.write_text("[PAD]\n[UNK]\n")
  checkpoint = root / "official" / "legacy" / "model_best.pth"
  with pytest.raises(ValueError) as err:
    import_official(vseinf_config(root), checkpoint, vocab, tmp_path / "w", progress=False)
  assert str(err.value) == (
    f"--vocab: {vocab} is not the vocab.txt of config.text.pretrained "
    f"({root / 'bert-base-uncased'}), which VSE∞ tokenises with (omit --vocab)"
  )
  assert not (tmp_path / "w").exists()
