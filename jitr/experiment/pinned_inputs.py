"""What a workdir's results depend on outside its checkpoints, pinned by content.

A run reads files that live outside its checkpoints: the precomp features and captions of
the splits it trains and tests on (or the image, text and label files of a labelled vector
dataset's), the vocabulary file it was given, the workdir's own ``vocab.json`` (the only
record of an imported checkpoint's word ids), CVSE's concept files and the WordNet files
of its official labels (``index.noun``, ``noun.exc``), the BERT folder of a WordPiece run.
The dataset's files are those its kind's source names
(:meth:`jitr.experiment.data_sources.DataSource.pinned_files`).
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

Third-party files are also checked against the published ones jitr knows
(:mod:`jitr.known_files`: CVSE's official F30K concept files, WordNet 3.0's ``index.noun``
and ``noun.exc``, all-MiniLM-L6-v2's folder, bert-base-uncased's ``vocab.txt``), from the
same digests (a file is hashed once): a copy of a known set with a file of other bytes is
refused in one line (:class:`InputDigestError`), whatever ``--allow_changed_inputs`` says;
a file given with its SHA-256 (``--input_sha256=FILE=SHA256``, :func:`given_digests`) must
have it. Each pin records what its file was verified against (``verified``: the known
file, :data:`GIVEN`, or :data:`UNVERIFIED`); :func:`unverified_note` is the one line
naming the third-party files that nothing verified.

jitr_shapes is generated, and relevance records carry their own checksums (checked when
read): neither is pinned here. Hashing costs one read of each file
(``scripts/bench_pinned_inputs.py``: about 1 s per GiB on the 2-core machine, so an
F30K-sized folder's first pin takes some seconds and a later check a ``stat`` per file).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import os
import re
from collections.abc import Mapping, Sequence
from typing import Any

from jitr import fileio, known_files, paths
from jitr.data.concept_data import ARRAYS_NAME, HEADER_NAME
from jitr.data.wordnet_nouns import NOUN_EXCEPTIONS, NOUN_INDEX
from jitr.experiment.data_sources import data_source
from jitr.experiment.run_concepts import OFFICIAL_LABELS, resolved_labels
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
# the roles of third-party files: what :func:`unverified_note` names when nothing verified
# them (the files of a concept folder jitr wrote are jitr's, checked by their own header)
THIRD_PARTY_ROLES = (
  "config.text.pretrained/",
  "config.concepts.source/",
  "config.concepts.wordnet/",
)
JITR_WRITTEN = (HEADER_NAME, ARRAYS_NAME)
UNVERIFIED = "none"
"""A pin's ``verified`` when nothing checked its file's bytes against published ones."""
GIVEN = "the given SHA-256"
"""A pin's ``verified`` when its file has the SHA-256 given for it (``--input_sha256``)."""
SHA256_FLAG = "--input_sha256"


class ChangedInputError(ValueError):
  """A pinned input changed (one line naming the file and both hashes)."""


class InputDigestError(ValueError):
  """An input whose bytes are not the published ones: a damaged copy of a file jitr knows
  (:mod:`jitr.known_files`), or a file without the SHA-256 given for it (one line)."""


@dataclasses.dataclass(frozen=True)
class Fingerprint:
  """One file as pinned: absolute path, size in bytes, ``st_mtime_ns``, SHA-256 and what its
  bytes were verified against (a known file's ``TITLE: NAME``, :data:`GIVEN` or
  :data:`UNVERIFIED`)."""

  path: str
  size: int
  mtime_ns: int
  sha256: str
  verified: str = UNVERIFIED

  def as_json(self) -> dict[str, Any]:
    return dataclasses.asdict(self)


def run_inputs(config: Mapping[str, Any], workdir: str) -> dict[str, str]:
  """``{role: absolute path}`` of every file outside the checkpoints the run of ``config``
  in ``workdir`` reads (module docstring); files that do not exist are left out."""
  found = {VOCAB_ROLE: os.path.join(workdir, WORKDIR_VOCAB)}
  vocab_file = config["vocab_file"]
  if vocab_file and paths.absolute(vocab_file) != paths.absolute(found[VOCAB_ROLE]):
    found["config.vocab_file"] = vocab_file
  found.update(data_source(config["dataset"]).pinned_files(config))
  folder = config["text"]["pretrained"]
  if folder:
    found.update({f"config.text.pretrained/{n}": os.path.join(folder, n) for n in BERT_FILES})
  source = config["concepts"]["source"]
  if source and paths.isdir(source):
    names = sorted(n for n in paths.listdir(source) if paths.isfile(os.path.join(source, n)))
    found.update({f"config.concepts.source/{n}": os.path.join(source, n) for n in names})
  wordnet = config["concepts"]["wordnet"]
  labels = config["concepts"]["labels"]
  if not labels and hasattr(config, "concepts"):  # a ConfigDict before resolved_config
    labels = resolved_labels(config)
  if wordnet and labels == OFFICIAL_LABELS:
    found.update({f"config.concepts.wordnet/{n}": os.path.join(wordnet, n) for n in WORDNET_FILES})
  return {role: paths.absolute(p) for role, p in found.items() if paths.isfile(p)}


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
  config: Mapping[str, Any],
  workdir: str,
  roles: tuple[str, ...] | None = None,
  given: Mapping[str, str] | None = None,
) -> tuple[dict, list[InputChange]]:
  """``(fingerprints now, changes)``: each file the run of ``config`` reads
  (:func:`run_inputs`; only ``roles`` when given) fingerprinted, hashing only what the pins
  cannot vouch for (module docstring) and verified (:func:`verified_inputs`; ``given``:
  :func:`given_digests`), and each pinned role whose file changed or is gone.

  Raises:
    InputDigestError: a damaged copy of a known file, or a file without its given SHA-256.
    ValueError: a ``given`` file that the run does not read.
  """
  pins = read_pins(workdir) or {}
  inputs = run_inputs(config, workdir)
  if roles is not None:
    pins = {r: p for r, p in pins.items() if r in roles}
    inputs = {r: p for r, p in inputs.items() if r in roles}
  now: dict[str, Fingerprint] = {}
  for role, path in inputs.items():
    pin = pins.get(role)
    if pin is not None and pin.path == path and (pin.size, pin.mtime_ns) == _identity(path):
      now[role] = pin
    else:
      now[role] = fingerprint(path)
  now = verified_inputs(now, pins, given or {})
  changes = [
    InputChange(role, pins[role], now[role])
    for role in now
    if role in pins and now[role].sha256 != pins[role].sha256
  ]
  changes += [InputChange(role, pin, None) for role, pin in pins.items() if role not in now]
  return now, changes


def given_digests(entries: Sequence[str]) -> dict[str, str]:
  """``{absolute path: SHA-256}`` of ``--input_sha256`` entries ``FILE=SHA256`` (the digest
  in lower case; the last ``=`` splits them); a malformed entry is one line."""
  out = {}
  for entry in entries:
    path, _, digest = entry.rpartition("=")
    if not path or not re.fullmatch(r"[0-9a-fA-F]{64}", digest):
      raise ValueError(f"{SHA256_FLAG}={entry}: expected FILE=SHA256 (64 hexadecimal digits)")
    out[paths.absolute(path)] = digest.lower()
  return out


def verified_inputs(
  now: Mapping[str, Fingerprint], pins: Mapping[str, Fingerprint], given: Mapping[str, str]
) -> dict[str, Fingerprint]:
  """``now`` with each file's ``verified``: :data:`GIVEN` when ``given`` (``{absolute path:
  SHA-256}``) names it and it has that digest, the known file its bytes are
  (:func:`jitr.known_files.classify`, each file among the others of its folder), else
  :data:`GIVEN` when its pin says so and it is the pinned file, else :data:`UNVERIFIED`.

  Raises:
    InputDigestError: a file without its given SHA-256, or a damaged copy of a known file.
    ValueError: a ``given`` file that is not among ``now``'s.
  """
  read = {fp.path for fp in now.values()}
  stray = next((p for p in given if p not in read), None)
  if stray is not None:
    raise ValueError(
      f"{SHA256_FLAG}={stray}: not a file this run reads (its features and captions, "
      "vocabulary, concept files, WordNet files or BERT folder's config.json, vocab.txt and "
      "weights)"
    )
  folders: dict[str, dict[str, str]] = {}
  for fp in now.values():
    folders.setdefault(os.path.dirname(fp.path), {})[os.path.basename(fp.path)] = fp.sha256
  out = {}
  for role, fp in now.items():
    expected = given.get(fp.path)
    if expected is not None:
      if fp.sha256 != expected:
        raise InputDigestError(
          f"{fp.path}: its SHA-256 is {fp.sha256}, not the {expected} given ({SHA256_FLAG}): a "
          "damaged copy or another file than the one published"
        )
      out[role] = dataclasses.replace(fp, verified=GIVEN)
      continue
    verdict = known_files.classify(os.path.basename(fp.path), folders[os.path.dirname(fp.path)])
    if verdict.status == known_files.REFUSED:
      raise InputDigestError(known_files.refusal(fp.path, verdict, fp.sha256))
    pin = pins.get(role)
    if verdict.status == known_files.VERIFIED:
      verified = verdict.against()
    elif pin is not None and pin.sha256 == fp.sha256 and pin.verified == GIVEN:
      verified = GIVEN
    else:
      verified = UNVERIFIED
    out[role] = dataclasses.replace(fp, verified=verified)
  return out


def unverified_note(*inputs: Mapping[str, Fingerprint]) -> str | None:
  """The one line naming the third-party files (:data:`THIRD_PARTY_ROLES`) of the runs'
  ``inputs`` (``{role: Fingerprint}`` each, as :func:`verify_inputs` returns them) that
  nothing verified, each once, or ``None`` when there are none."""
  names = sorted(
    {
      fp.path
      for now in inputs
      for role, fp in now.items()
      if role.startswith(THIRD_PARTY_ROLES)
      and fp.verified == UNVERIFIED
      and os.path.basename(fp.path) not in JITR_WRITTEN
    }
  )
  if not names:
    return None
  return (
    f"note: not verified (jitr knows no published SHA-256 of them; inputs.json pins them as "
    f"found): {', '.join(names)}; check each against its published SHA-256 with "
    f"{SHA256_FLAG}=FILE=SHA256 (jitr-train, jitr-import)"
  )


def verify_inputs(
  config: Mapping[str, Any],
  workdir: str,
  *,
  allow_changed: bool = False,
  roles: tuple[str, ...] | None = None,
  given: Mapping[str, str] | None = None,
) -> tuple[dict, list[InputChange]]:
  """:func:`check_inputs`, refusing the first change unless ``allow_changed``; ``roles``
  limits the check to those roles (e.g. a fine-tuning source's ``vocab.json``, the one
  file of it the new run reads); ``given``: :func:`given_digests`.

  Raises:
    InputDigestError: a damaged copy of a known file, or a file without its given SHA-256
      (even with ``allow_changed``).
    ChangedInputError: a pinned input changed or is gone (one line naming the file, how
      to proceed if the change is meant).
  """
  now, changes = check_inputs(config, workdir, roles, given)
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
  workdir's; the SHA-256s of a file of the split differ, e.g. a precomp folder's
  ``{split}_ims.npy`` / ``_caps.txt``:
  :meth:`~jitr.experiment.data_sources.DataSource.split_roles`), or ``None`` (the same,
  not pinned in both, or a dataset whose splits pin no file)."""
  ours, theirs = read_pins(workdir), read_pins(other)
  if ours is None or theirs is None:
    return None
  for role in data_source(config["dataset"]).split_roles(config, split):
    if role in ours and role in theirs and ours[role].sha256 != theirs[role].sha256:
      return (
        f"its {split} split's {role.rpartition('/')[2]} is another file (SHA-256 "
        f"{theirs[role].sha256[:16]}… != {ours[role].sha256[:16]}…)"
      )
  return None
