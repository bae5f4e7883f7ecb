"""Third-party inputs checked by content where a run reads them: a copy of CVSE's official
F30K concept files, of WordNet 3.0 or of the all-MiniLM-L6-v2 folder with one file changed
at its size is refused in one line naming the file by jitr-train (even with
--allow_changed_inputs), jitr-import and jitr-eval, before anything is written; another
BERT folder is used with one "not verified" line, and its files' SHA-256s given with
--input_sha256 are checked and recorded in inputs.json."""

from __future__ import annotations

import json
import pathlib
import shutil

import pytest

from configs import paper
from jitr import experiment, fileio
from jitr.experiment import pinned_inputs
from jitr.experiment.official_import import import_official
from jitr.experiment.pinned_inputs import GIVEN, UNVERIFIED, InputDigestError, verify_inputs
from jitr.experiment.run_config import resolved_config
from jitr.experiment.workdir import record_config
from jitr.known_files import CVSE_F30K, MINILM_L6_V2, WORDNET_30
from tests.bert_folder import write_bert_folder
from tests.data_folders import data_folder, wordnet_folder
from tests.file_fixtures import snapshot
from tests.test_known_files import minilm_folder

BERT_ROLES = ("config.json", "model.safetensors", "vocab.txt")


def _flip(path: pathlib.Path, at: float) -> None:
  """Flips the low bit of the byte at ``at`` of ``path``'s length (the size is kept)."""
  offset = int(path.stat().st_size * at)
  with open(path, "r+b") as f:
    f.seek(offset)
    byte = f.read(1)[0]
    f.seek(offset)
    f.write(bytes([byte ^ 1]))


def _renamed_lemmas(path: pathlib.Path, lemmas=("dog", "cat", "man")) -> None:
  """Renames three lemma lines of WordNet's ``index.noun`` in place (same length)."""
  lines = path.read_text(encoding="utf-8").split("\n")
  for i, line in enumerate(lines):
    if line.split(" ", 1)[0] in lemmas:
      lines[i] = "x" + line[1:]
  path.write_text("\n".join(lines), encoding="utf-8")


@pytest.fixture(scope="module")
def damaged(tmp_path_factory):
  """``{set: damaged file}``: copies of the real known sets, one file each changed in place."""
  root = tmp_path_factory.mktemp("damaged")
  official = data_folder("JITR_OFFICIAL_DATA", "official", "cvse_f30k", "official CVSE files")
  shutil.copytree(official / "cvse_f30k", root / "cvse")
  _flip(root / "cvse" / "f30k_concepts_glove_word2vec.pkl", 0.5)  # a vector's byte
  (root / "wordnet").mkdir()
  for name in ("index.noun", "noun.exc"):
    shutil.copy(wordnet_folder() / name, root / "wordnet" / name)
  _renamed_lemmas(root / "wordnet" / "index.noun")
  (root / "minilm").mkdir()
  for name in BERT_ROLES:
    shutil.copy(minilm_folder() / name, root / "minilm" / name)
  _flip(root / "minilm" / "model.safetensors", 0.8)
  return {
    "cvse": root / "cvse" / "f30k_concepts_glove_word2vec.pkl",
    "wordnet": root / "wordnet" / "index.noun",
    "minilm": root / "minilm" / "model.safetensors",
  }


def _config(kind: str, folder: pathlib.Path, tmp_path: pathlib.Path):
  """A CVSE run with the official labels (concept files and WordNet: the real ones but
  ``kind``'s ``folder``) or a VSE∞ run with the BERT ``folder``."""
  if kind == "minilm":
    config = paper.get_config("f30k,vseinf,triplet")
    config.text.pretrained = str(folder)
  else:
    config = paper.get_config("f30k,cvse,triplet")
    cvse = data_folder("JITR_OFFICIAL_DATA", "official", "cvse_f30k", "official CVSE files")
    config.concepts.source = str(folder if kind == "cvse" else cvse / "cvse_f30k")
    config.concepts.wordnet = str(folder if kind == "wordnet" else wordnet_folder())
  config.precomp_root = str(tmp_path / "data")
  config.data_dir = str(tmp_path / "cache")
  return config


def _train(config, tmp_path):
  experiment.train_and_evaluate(config, str(tmp_path / "run"), allow_changed_inputs=True)


def _import(config, tmp_path):
  import_official(config, tmp_path / "model_best.pth", None, tmp_path / "run", progress=False)


def _evaluate(config, tmp_path):
  record_config(resolved_config(config), str(tmp_path / "run"))  # a workdir of this config
  before = snapshot(tmp_path / "run")
  try:
    experiment.evaluate_workdir(str(tmp_path / "run"), split="test")
  finally:
    assert snapshot(tmp_path / "run") == before


SETS = {"cvse": CVSE_F30K, "wordnet": WORDNET_30, "minilm": MINILM_L6_V2}


@pytest.mark.parametrize("kind", list(SETS))
@pytest.mark.parametrize("run", [_train, _import, _evaluate], ids=["train", "import", "eval"])
def test_a_changed_copy_of_a_known_set_is_refused_before_anything_is_written(
  damaged, tmp_path, kind, run
):
  path = damaged[kind]
  config = _config(kind, path.parent, tmp_path)
  with pytest.raises(InputDigestError) as err:
    run(config, tmp_path)
  expected = SETS[kind].file(path.name).sha256
  found = fileio.file_digest(str(path))[1]
  assert str(err.value) == (
    f"{path}: not the {path.name} of {SETS[kind].title}, whose other files its folder holds "
    f"(SHA-256 {expected[:16]}… expected, {found[:16]}… found): a damaged or changed copy; "
    "restore the published file"
  )
  assert sorted(p.name for p in tmp_path.iterdir()) == (["run"] if run is _evaluate else [])


@pytest.fixture
def other_bert(tmp_path):
  """``(config, workdir, {role: path})``: a VSE∞ run with a generated BERT folder."""
  folder = write_bert_folder(tmp_path / "bert", ["dog", "cat"])
  config = resolved_config(_config("minilm", folder, tmp_path))
  roles = {f"config.text.pretrained/{n}": str(folder / n) for n in BERT_ROLES}
  return config, str(tmp_path / "run"), roles


def test_another_bert_folder_is_not_verified_and_its_given_sha256_is_checked(other_bert):
  config, workdir, roles = other_bert
  now, _ = verify_inputs(config, workdir)
  assert {r: now[r].verified for r in roles} == dict.fromkeys(roles, UNVERIFIED)
  paths = roles.values()
  assert pinned_inputs.unverified_note(now) == (
    f"note: not verified (jitr knows no published SHA-256 of them; inputs.json pins them as "
    f"found): {', '.join(sorted(paths))}; check each against its published SHA-256 with "
    "--input_sha256=FILE=SHA256 (jitr-train, jitr-import)"
  )
  weights = roles["config.text.pretrained/model.safetensors"]
  digest = fileio.file_digest(weights)[1]
  given = pinned_inputs.given_digests([f"{weights}={digest.upper()}"])
  now, _ = verify_inputs(config, workdir, given=given)
  assert now["config.text.pretrained/model.safetensors"].verified == GIVEN
  assert weights not in pinned_inputs.unverified_note(now)
  pinned_inputs.write_pins(workdir, now)  # as jitr-train and jitr-import pin them
  pins = json.loads((pathlib.Path(workdir) / "inputs.json").read_text())["inputs"]
  assert {r: pins[r]["verified"] for r in roles} == {
    "config.text.pretrained/config.json": UNVERIFIED,
    "config.text.pretrained/model.safetensors": "the given SHA-256",
    "config.text.pretrained/vocab.txt": UNVERIFIED,
  }
  again, _ = verify_inputs(config, workdir)  # a resume or jitr-eval: the pin says it
  assert again["config.text.pretrained/model.safetensors"].verified == GIVEN
  wrong = "0" * 64
  with pytest.raises(InputDigestError) as err:
    verify_inputs(config, workdir, given=pinned_inputs.given_digests([f"{weights}={wrong}"]))
  assert str(err.value) == (
    f"{weights}: its SHA-256 is {digest}, not the {wrong} given (--input_sha256): a damaged "
    "copy or another file than the one published"
  )


def test_a_bad_input_sha256_is_one_line_before_anything_is_written(other_bert, tmp_path):
  config, workdir, roles = other_bert
  with pytest.raises(ValueError) as err:
    pinned_inputs.given_digests(["bert/model.safetensors=abc"])
  assert str(err.value) == (
    "--input_sha256=bert/model.safetensors=abc: expected FILE=SHA256 (64 hexadecimal digits)"
  )
  stray = str(tmp_path / "elsewhere.bin")
  with pytest.raises(ValueError) as err:
    experiment.train_and_evaluate(config, workdir, input_sha256=[f"{stray}={'0' * 64}"])
  assert str(err.value) == (
    f"--input_sha256={stray}: not a file this run reads (its features and captions, "
    "vocabulary, concept files, WordNet files or BERT folder's config.json, vocab.txt and "
    "weights)"
  )
  weights = roles["config.text.pretrained/model.safetensors"]
  with pytest.raises(InputDigestError, match="not the 0{64} given"):
    experiment.train_and_evaluate(config, workdir, input_sha256=[f"{weights}={'0' * 64}"])
  assert not pathlib.Path(workdir).exists()


def test_a_known_file_of_other_bytes_given_with_its_sha256_is_taken(damaged, tmp_path):
  """WordNet 3.0 of another packaging: the user vouches for its bytes with --input_sha256."""
  path = damaged["wordnet"]
  config = resolved_config(_config("wordnet", path.parent, tmp_path))
  given = pinned_inputs.given_digests([f"{path}={fileio.file_digest(str(path))[1]}"])
  now, _ = verify_inputs(config, str(tmp_path / "run"), given=given)
  verified = {r: fp.verified for r, fp in now.items() if r.startswith("config.concepts.")}
  assert verified["config.concepts.wordnet/index.noun"] == GIVEN
  assert verified["config.concepts.wordnet/noun.exc"] == f"{WORDNET_30.title}: noun.exc"
  assert verified["config.concepts.source/vocab_f30k_concepts.pkl"] == (
    f"{CVSE_F30K.title}: vocab_f30k_concepts.pkl"
  )
