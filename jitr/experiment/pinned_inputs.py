"""What a workdir's results depend on outside its checkpoints, pinned by content.

A run reads files that live outside its checkpoints: the precomp features and captions of
the splits it trains and tests on (or the image, text and label files of a labelled vector
dataset's), the vocabulary file it was given, the workdir's own ``vocab.json`` (the only
record of an imported checkpoint's word ids), CVSE's concept files and the WordNet files
of its official labels (``index.noun``, ``noun.exc``), the BERT folder of a WordPiece run.
``inputs.json`` in the workdir (:data:`PINS`) records each one by role: its absolute path,
size, modification time and SHA-256.

:func:`verify_inputs` compares the files a config names now with those pins, role by
role, before a resume, an evaluation (ensemble members included), a fine-tuning start
(``init_from``) or a teacher reads them:

- the same path, size and modification time: unchanged, nothing is read (a ``stat``);
- otherwise the file is hashed: the same SHA-256 passes (a moved or copied folder);
- another SHA-256, or a pinned file that is gone, is a change: refused in one line naming
  the file, unless the caller allows changed inputs (``--allow_changed_inputs``), when
  the change is returned to be recorded.

jitr_shapes is generated, and relevance records carry their own checksums (checked when
read): neither is pinned here. Hashing costs one read of each file
(``scripts/bench_pinned_inputs.py``: about 1 s per GiB on the 2-core machine, so an
F30K-sized folder's first pin takes some seconds and a later check a ``stat`` per file).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import os
from collections.abc import Mapping
from typing import Any

from jitr import fileio, paths
from jitr.data import precomp
from jitr.data.datasets import dataset_info
from jitr.data.labelled import LabelledSettings, split_paths
from jitr.data.wordnet_nouns import NOUN_EXCEPTIONS, NOUN_INDEX
from jitr.experiment.run_concepts import OFFICIAL_LABELS
from jitr.experiment.workdir import read_workdir_config

PINS = "inputs.json"
"""The workdir file that pins the run's inputs."""
WORKDIR_VOCAB = "vocab.json"
VOCAB_ROLE = "workdir vocab.json"
"""The role of the workdir's own vocabulary: what a fine-tuning run or a teacher reads of
another workdir besides its checkpoint."""
# the files of a Hugging Face BERT folder a run reads (the weights: whichever exists)
BERT_FILES = ("config.json", "vocab.txt", "model.safetensors", "pytorch_model.bin")
# the files of a WordNet folder the official CVSE labels read
WORDNET_FILES = (NOUN_INDEX, NOUN_EXCEPTIONS)


class ChangedInputError(ValueError):
  """A pinned input changed (one line naming the file and both hashes)."""


@dataclasses.dataclass(frozen=True)
class Fingerprint:
  """One file as pinned: absolute path, size in bytes, ``st_mtime_ns`` and SHA-256."""

  path: str
  size: int
  mtime_ns: int
  sha256: str

  def as_json(self) -> dict[str, Any]:
    return dataclasses.asdict(self)


def run_inputs(config: Mapping[str, Any], workdir: str) -> dict[str, str]:
  """``{role: absolute path}`` of every file outside the checkpoints the run of ``config``
  in ``workdir`` reads (module docstring); files that do not exist are left out."""
  found = {VOCAB_ROLE: os.path.join(workdir, WORKDIR_VOCAB)}
  vocab_file = config["vocab_file"]
  if vocab_file and paths.absolute(vocab_file) != paths.absolute(found[VOCAB_ROLE]):
    found["config.vocab_file"] = vocab_file
  found.update(_precomp_files(config))
  found.update(_labelled_files(config))
  folder = config["text"]["pretrained"]
  if folder:
    found.update({f"config.text.pretrained/{n}": os.path.join(folder, n) for n in BERT_FILES})
  source = config["concepts"]["source"]
  if source and paths.isdir(source):
    names = sorted(n for n in paths.listdir(source) if paths.isfile(os.path.join(source, n)))
    found.update({f"config.concepts.source/{n}": os.path.join(source, n) for n in names})
  wordnet = config["concepts"]["wordnet"]
  if wordnet and config["concepts"]["labels"] == OFFICIAL_LABELS:
    found.update({f"config.concepts.wordnet/{n}": os.path.join(wordnet, n) for n in WORDNET_FILES})
  return {role: paths.absolute(p) for role, p in found.items() if paths.isfile(p)}


def _precomp_files(config: Mapping[str, Any]) -> dict[str, str]:
  """The features and captions of the splits a precomp run reads (train, dev, test)."""
  info = dataset_info(config["dataset"])
  if info.kind != "precomp":
    return {}
  short = config["dataset"].removesuffix("_precomp")
  folder = precomp.precomp_dir(config["precomp_root"], short)
  out = {}
  for split in dict.fromkeys(("train", "dev", config["test_split"])):
    for suffix in ("ims.npy", "caps.txt"):
      name = f"{split}_{suffix}"
      out[f"{config['dataset']}/{name}"] = os.path.join(folder, name)
  return out


def _labelled_files(config: Mapping[str, Any]) -> dict[str, str]:
  """The image, text and label files of the splits a labelled vector run reads (a .mat
  file that holds several of them once)."""
  if dataset_info(config["dataset"]).kind != "labelled":
    return {}
  settings = LabelledSettings.of(config["labelled"])
  out = {}
  for name in settings.split_names().values():
    for path, _ in split_paths(settings, name).values():
      out[f"{config['dataset']}/{os.path.basename(path)}"] = path
  return out


def fingerprint(path: str, *, sha256: str | None = None) -> Fingerprint:
  """``path``'s :class:`Fingerprint` (``sha256`` when already known, else hashed)."""
  size, mtime_ns = _identity(path)
  digest = sha256 if sha256 is not None else fileio.file_digest(path)[1]
  return Fingerprint(paths.absolute(path), size, mtime_ns, digest)


def _identity(path: str) -> tuple[int, int]:
  """``(size, st_mtime_ns)`` of ``path`` (a storage URL: its size and 0)."""
  if paths.is_url(path):
    return paths.getsize(path), 0
  stat = os.stat(path)
  return stat.st_size, stat.st_mtime_ns


def read_pins(workdir: str) -> dict[str, Fingerprint] | None:
  """The pins of ``workdir`` (``None`` when it has no :data:`PINS`, as a workdir written
  before inputs were pinned)."""
  path = os.path.join(workdir, PINS)
  if not paths.isfile(path):
    return None
  data = fileio.read_json(path)
  pins = data.get("inputs") if isinstance(data, dict) else None
  if not isinstance(pins, dict):
    raise ValueError(f'{path}: expected {{"inputs": {{ROLE: {{"path", "size", ...}}}}}}')
  try:
    return {role: Fingerprint(**pin) for role, pin in pins.items()}
  except TypeError:
    raise ValueError(f"{path}: a pin without path, size, mtime_ns and sha256") from None


@dataclasses.dataclass(frozen=True)
class InputChange:
  """A pinned input that changed: its role, the pin, and the file now (``None``: gone)."""

  role: str
  pinned: Fingerprint
  now: Fingerprint | None

  def describe(self, workdir: str) -> str:
    """One line: the file, both hashes and where the pin is."""
    where = os.path.join(workdir, PINS)
    if self.now is None:
      return f"{self.pinned.path} ({self.role}): gone since {where} pinned it"
    moved = "" if self.now.path == self.pinned.path else f" (pinned at {self.pinned.path})"
    return (
      f"{self.now.path}{moved}: changed since {where} pinned it as {self.role} (SHA-256 "
      f"{self.pinned.sha256[:16]}… then, {self.now.sha256[:16]}… now)"
    )

  def as_json(self) -> dict[str, Any]:
    now = self.now.as_json() if self.now is not None else None
    return {"role": self.role, "pinned": self.pinned.as_json(), "now": now}


def check_inputs(
  config: Mapping[str, Any], workdir: str, roles: tuple[str, ...] | None = None
) -> tuple[dict, list[InputChange]]:
  """``(fingerprints now, changes)``: each file the run of ``config`` reads
  (:func:`run_inputs`; only ``roles`` when given) fingerprinted, hashing only what the pins
  cannot vouch for (module docstring), and each pinned role whose file changed or is gone."""
  pins = read_pins(workdir) or {}
  inputs = run_inputs(config, workdir)
  if roles is not None:
    pins = {r: p for r, p in pins.items() if r in roles}
    inputs = {r: p for r, p in inputs.items() if r in roles}
  now: dict[str, Fingerprint] = {}
  changes = []
  for role, path in inputs.items():
    pin = pins.get(role)
    if pin is not None and pin.path == path and (pin.size, pin.mtime_ns) == _identity(path):
      now[role] = pin
      continue
    now[role] = fingerprint(path)
    if pin is not None and now[role].sha256 != pin.sha256:
      changes.append(InputChange(role, pin, now[role]))
  changes += [InputChange(role, pin, None) for role, pin in pins.items() if role not in now]
  return now, changes


def verify_inputs(
  config: Mapping[str, Any],
  workdir: str,
  *,
  allow_changed: bool = False,
  roles: tuple[str, ...] | None = None,
) -> tuple[dict, list[InputChange]]:
  """:func:`check_inputs`, refusing the first change unless ``allow_changed``; ``roles``
  limits the check to those roles (e.g. a fine-tuning source's ``vocab.json``, the one
  file of it the new run reads).

  Raises:
    ChangedInputError: a pinned input changed or is gone (one line naming the file, how
      to proceed if the change is meant).
  """
  now, changes = check_inputs(config, workdir, roles)
  if changes and not allow_changed:
    raise ChangedInputError(
      f"{changes[0].describe(workdir)}; its results came from the pinned file (pass "
      "--allow_changed_inputs if the change is meant)"
    )
  return now, changes


def write_pins(workdir: str, now: Mapping[str, Fingerprint], changes=()) -> None:
  """Writes :data:`PINS` in ``workdir`` from ``now``; allowed ``changes`` are appended to
  its ``changes`` history (with the time) so the record shows what a run was given."""
  path = os.path.join(workdir, PINS)
  history = []
  if paths.isfile(path):
    old = fileio.read_json(path)
    history = list(old.get("changes", [])) if isinstance(old, dict) else []
  when = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
  history += [{**c.as_json(), "allowed": when} for c in changes]
  data = {"inputs": {role: pin.as_json() for role, pin in now.items()}}
  if history:
    data["changes"] = history
  fileio.write_json_atomic(path, data, indent=2, sort_keys=False)


def changes_json(workdir: str, changes) -> list[dict[str, Any]]:
  """The allowed ``changes`` of ``workdir`` as a report records them."""
  return [{"workdir": workdir, **c.as_json()} for c in changes]


def check_source_vocab(source: str, allow_changed: bool = False) -> None:
  """Verifies the pinned ``vocab.json`` of the workdir ``source`` (a fine-tuning source or
  a teacher: the one file of it besides its checkpoint that another run reads); a workdir
  without pins or ``config.json`` passes (its own checks follow)."""
  source = paths.absolute(source)
  config = read_workdir_config(source)
  if config is None or read_pins(source) is None:
    return
  verify_inputs(config, source, allow_changed=allow_changed, roles=(VOCAB_ROLE,))


def pinned_split_difference(
  workdir: str, other: str, config: Mapping[str, Any], split: str
) -> str | None:
  """Why ``other``'s pinned ``split`` files are not ``workdir``'s (``config``: the first
  workdir's; their ``{split}_ims.npy`` / ``_caps.txt`` SHA-256s differ), or ``None`` (the
  same, or not pinned in both)."""
  ours, theirs = read_pins(workdir), read_pins(other)
  if ours is None or theirs is None or dataset_info(config["dataset"]).kind != "precomp":
    return None
  split_name = "dev" if split == "val" else config["test_split"] if split == "test" else split
  for suffix in ("ims.npy", "caps.txt"):
    role = f"{config['dataset']}/{split_name}_{suffix}"
    if role in ours and role in theirs and ours[role].sha256 != theirs[role].sha256:
      return (
        f"its {split} split's {split_name}_{suffix} is another file (SHA-256 "
        f"{theirs[role].sha256[:16]}… != {ours[role].sha256[:16]}…)"
      )
  return None
