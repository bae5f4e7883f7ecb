"""``import_official``: an official checkpoint of a registered network (SGR, SAF, VSRN,
CVSE, VSE∞) and its vocabulary become a jitr workdir, as ``jitr-import`` runs it.

The checkpoint is the dict the official ``train.py`` saves (``{'epoch', 'model': [state
dicts], 'best_rsum', 'opt', 'Eiters'}``), read without unpickling anything but tensors,
containers and the ``argparse.Namespace`` of ``opt``
(:func:`jitr.models.official_checkpoint.load_checkpoint`). The network is read from the
weights: each registered network's :class:`~jitr.models.official_format.OfficialFormat`
(:attr:`!jitr.models.Network.official`, in its folder of :mod:`jitr.models`) says which
``model`` lists are its codebase's and converts them; exactly one must hold the checkpoint.
The model fields the weights fix (embedding and word sizes, SGR steps, GCN layers, VSRN's
feature BatchNorm) replace the config's, and every one that the saved ``opt`` also states
must agree with it (the shared :data:`OPT_FIELDS`, then the codebase's own), as must
``opt.data_name`` with ``config.dataset`` (VSE∞'s ``f30k`` names ``f30k_precomp``) and the
vocabulary file's size with the word embedding. A network of WordPiece captions (VSE∞)
takes its vocabulary from the BERT folder ``config.text.pretrained``, which its format
checks against the weights; the dataset constants (CVSE's concepts) are checked by the
format too. Official VSRN checkpoints hold no caption decoder: the workdir's model has
``caption_weight = 0``, and fine-tuning it with the captioning loss starts the decoder
fresh (:func:`jitr.experiment.init_from.start_from`).

The workdir gets ``config.json`` (``vocab_file`` naming its ``vocab.json``), the
vocabulary in jitr's format with the official ids, the converted parameters as its
latest checkpoint and, when the checkpoint states its validation RSUM (``best_rsum``),
as its best checkpoint ranked by that value, and ``import.json`` (the source file, its
SHA-256, epoch, iterations and ``opt``). ``jitr-eval``, the SGRAF ensemble of two imported
workdirs and ``jitr-train --config.init_from`` then work on it as on a trained workdir.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import ml_collections

from jitr import fileio, paths, training
from jitr.data.official_vocab import read_official_vocab
from jitr.data.vocab import Vocab
from jitr.data.wordpiece import read_vocab_lines
from jitr.data.wordpiece_vocab import WordPieceVocab
from jitr.experiment import workdir as workdir_lib
from jitr.experiment.init_from import shape_mismatch
from jitr.experiment.loaded_data import load_data
from jitr.experiment.model_state import initial_state, template_steps
from jitr.experiment.pinned_inputs import (
  VOCAB_ROLE,
  check_inputs,
  fingerprint,
  given_digests,
  write_pins,
)
from jitr.experiment.run_caption_form import with_official_caption_form
from jitr.experiment.run_concepts import CONCEPTS, constant_origins, dataset_constants
from jitr.experiment.run_config import check_train_config, resolved_config
from jitr.experiment.run_tokenizer import with_official_tokenizer
from jitr.folder_swap import atomic_folder
from jitr.models.official_checkpoint import (
  OfficialCheckpointError,
  checkpoint_format,
  load_checkpoint,
)
from jitr.models.official_format import ConvertedWeights, OfficialFormat
from jitr.models.registry import MODELS, network_name
from jitr.progress import Steps
from jitr.training.checkpoints import Checkpoints

IMPORT_RECORD = "import.json"
# opt attribute -> the model field it states (for the fields the weights fix)
OPT_FIELDS = {
  "embed_size": "embed_dim",
  "word_dim": "word_dim",
  "img_dim": "img_dim",
  "sim_dim": "sim_dim",
  "sgr_step": "sgr_step",
  "vocab_size": "vocab_size",
}


@dataclasses.dataclass(frozen=True)
class OfficialWeights:
  """An official checkpoint's network, weights and record.

  Attributes:
    official: the format of the codebase that wrote it (a registered network's
      :attr:`!jitr.models.Network.official`).
    converted: its weights as jitr's (the network, the model fields the weights fix, the
      Flax variables).
    opt: the saved ``opt`` as a dict (empty when absent).
    record: ``epoch``, ``Eiters`` and ``best_rsum`` where the checkpoint has them.
  """

  official: OfficialFormat
  converted: ConvertedWeights
  opt: dict[str, Any]
  record: dict[str, Any]

  @property
  def network(self) -> str:
    """The registered network the weights are (jitr's ``config.model.name``)."""
    return self.converted.network

  @property
  def fields(self) -> dict[str, Any]:
    """The model fields the weights fix (``vocab_size`` included)."""
    return self.converted.fields

  @property
  def img_dim(self) -> int:
    """The width of the image features the image encoder takes."""
    return self.converted.img_dim

  @property
  def wordpiece(self) -> bool:
    """Whether the network reads WordPiece captions of a BERT folder."""
    return MODELS[self.network].wordpiece


def official_formats() -> list[OfficialFormat]:
  """The official checkpoint formats of the registered networks, each once, in the
  registry's order."""
  formats: list[OfficialFormat] = []
  for network in MODELS.values():
    official = network.official
    if official is not None and not any(official is f for f in formats):
      formats.append(official)
  return formats


def _expected(path: str, formats: Sequence[OfficialFormat]) -> str:
  """The refusal of a checkpoint none of ``formats`` holds: which ``model`` lists they read."""
  layouts: dict[str, list[str]] = {}
  for official in formats:
    layouts.setdefault(official.layout(), []).append(official.codebase)
  names = [official.codebase for official in formats]
  lists = [f"{layout} ({', '.join(owners)})" for layout, owners in layouts.items()]
  return (
    f"{path}: expected an official {_either(names)} checkpoint, a dict whose 'model' is the "
    f"list {_either(lists)}"
  )


def _either(items: Sequence[str]) -> str:
  """``a, b or c``."""
  return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} or {items[-1]}"


def _flat_state_dict(path: str, parts: Any) -> tuple[OfficialFormat, dict[str, Any]]:
  """``(format, flat state dict)`` of the one registered format whose state dicts
  ``parts`` are; none, or several, is refused in one line."""
  formats = official_formats()
  found = [(f, flat) for f in formats if (flat := f.read(path, parts)) is not None]
  if len(found) > 1:
    names = _either([f.codebase for f, _ in found])
    raise OfficialCheckpointError(
      f"{path}: its state dicts fit the official formats of {names}: the checkpoint is "
      "ambiguous to jitr-import"
    )
  if not found:
    raise OfficialCheckpointError(_expected(path, formats))
  return found[0]


def read_official_weights(path: str | os.PathLike) -> OfficialWeights:
  """The network, converted weights and record of the official checkpoint at ``path``.

  Raises:
    OfficialCheckpointError: the file is not such a checkpoint (one line naming it).
    ValueError: its weights do not form the network (a missing or unexpected key).
  """
  path = os.fspath(path)
  checkpoint = load_checkpoint(path)
  if not isinstance(checkpoint, Mapping):
    raise OfficialCheckpointError(f"{path}: expected the dict an official train.py saves")
  official, state = _flat_state_dict(path, checkpoint.get("model"))
  try:
    converted = official.convert(state)
  except KeyError as err:
    raise ValueError(f"{path}: {err.args[0]}") from None
  opt = checkpoint.get("opt")
  opt = dict(vars(opt)) if isinstance(opt, argparse.Namespace) else dict(opt or {})
  record = {k: _plain(checkpoint[k]) for k in ("epoch", "Eiters", "best_rsum") if k in checkpoint}
  return OfficialWeights(official, converted, opt, record)


def _plain(value: Any) -> Any:
  """A JSON value for a number the checkpoint holds (a tensor, numpy or Python scalar)."""
  if hasattr(value, "item"):
    value = value.item()
  return value if isinstance(value, (int, float, str, bool)) or value is None else repr(value)


def opt_disagreement(weights: OfficialWeights, config: ml_collections.ConfigDict) -> str | None:
  """Why the saved ``opt`` does not describe these weights or this config's dataset, or
  ``None``: ``opt.embed_size=2048, but the weights have embed_dim 1024``. The shared
  fields (:data:`OPT_FIELDS`), then the codebase's own
  (:attr:`!jitr.models.official_format.OfficialFormat.opt_disagreement`), then
  ``opt.data_name``."""
  opt, fixed = weights.opt, {**weights.fields, "img_dim": weights.img_dim}
  for name, field in OPT_FIELDS.items():
    if name in opt and field in fixed and opt[name] != fixed[field]:
      return f"opt.{name}={opt[name]!r}, but the weights have {field} {fixed[field]!r}"
  reason = weights.official.opt_disagreement(opt, weights.converted)
  if reason is not None:
    return reason
  data = opt.get("data_name")
  if data is not None and data not in (config.dataset, config.dataset.removesuffix("_precomp")):
    return f"opt.data_name={data!r}, but config.dataset={config.dataset!r}"
  return None


def imported_config(
  config: ml_collections.ConfigDict, weights: OfficialWeights, workdir: str
) -> ml_collections.ConfigDict:
  """``config`` with the model fields the weights fix and ``vocab_file`` naming the
  workdir's ``vocab.json``; refuses a config of another network or dataset."""
  name = network_name(config.model)
  if name != weights.network:
    raise ValueError(
      f"config.model.name={name!r}, but the checkpoint holds {weights.network.upper()}: use a "
      f"config of that network (e.g. configs/paper.py:DATA,{weights.network},LOSS)"
    )
  reason = opt_disagreement(weights, config)
  if reason is not None:
    raise ValueError(f"the checkpoint's opt disagrees: {reason}")
  config = config.copy_and_resolve_references()
  with config.unlocked():
    for field, value in weights.fields.items():
      if field != "vocab_size":
        config.model[field] = value
    if not config.text.pretrained:  # a WordPiece run's vocabulary is its BERT folder's
      config.vocab_file = os.path.join(workdir, "vocab.json")
  return config


def check_concept_graph(config, weights: OfficialWeights, concepts) -> None:
  """The run's dataset constants must be the checkpoint's: for CVSE, its concepts
  (``config.concepts``; ``concepts``: their :class:`~jitr.models.ConceptInputs`, ``None``
  without) as many, of the width its GCN takes, with the same normalised graph
  (:attr:`!jitr.models.official_format.OfficialFormat.check_constants`)."""
  constants = {} if concepts is None else {CONCEPTS: concepts}
  weights.official.check_constants(
    config.model, weights.converted, constants, constant_origins(config)
  )


def imported_vocab(
  config: ml_collections.ConfigDict, weights: OfficialWeights, vocab_file
) -> Vocab | WordPieceVocab:
  """The vocabulary the checkpoint was trained with, of as many words as its word
  embedding has rows: ``vocab_file`` (an official vocabulary file), or for a network of
  WordPiece captions (VSE∞) the ``vocab.txt`` of ``config.text.pretrained``, whose BERT
  must be the checkpoint's (``vocab_file``, when given, must then hold the same tokens)."""
  if weights.wordpiece:
    weights.official.check_pretrained(config.text.pretrained, weights.converted)
    vocab = bert_vocab(config.text.pretrained, vocab_file, weights.official.codebase)
  elif not vocab_file:
    raise ValueError(
      f"--vocab: the official {weights.network.upper()} checkpoint needs the vocabulary file "
      "it was trained with (SGRAF's JSON or VSE++ / VSRN's vocab.pkl)"
    )
  else:
    vocab = read_official_vocab(vocab_file)
  if len(vocab) != weights.fields["vocab_size"]:
    raise ValueError(
      f"{vocab.vocab_file if weights.wordpiece else os.fspath(vocab_file)}: {len(vocab)} "
      f"words, but the checkpoint's word embedding has {weights.fields['vocab_size']} rows: "
      "not the vocabulary it was trained with"
    )
  return vocab


def imported_variables(converted: ConvertedWeights) -> dict[str, Any]:
  """The Flax variables of converted weights: ``params``, and ``batch_stats`` when the
  network keeps any (as its ``init`` gives them)."""
  stats = {"batch_stats": converted.batch_stats} if converted.batch_stats else {}
  return {"params": converted.params, **stats}


def bert_vocab(folder: str, vocab_file, codebase: str) -> WordPieceVocab:
  """The WordPiece vocabulary of the BERT ``folder``, after checking that ``vocab_file``
  (when given) holds its ``vocab.txt``'s tokens (``codebase``: the official code that
  tokenises with it, as the message names it)."""
  vocab = WordPieceVocab.from_folder(folder)
  if vocab_file and tuple(read_vocab_lines(os.fspath(vocab_file))) != vocab.words:
    raise ValueError(
      f"--vocab: {os.fspath(vocab_file)} is not the vocab.txt of config.text.pretrained "
      f"({folder}), which {codebase} tokenises with (omit --vocab)"
    )
  return vocab


# What jitr-import does, in order: one line each on stderr and one step of its progress line.
IMPORT_STEPS = (
  "computing the checkpoint's sha256",
  "reading the checkpoint",
  "reading the vocabulary",
  "loading data",
  "checking the weights against config.model",
  "writing the workdir",
)

# What ``import.json``'s ``verified`` says when nothing could check a legacy file
UNVERIFIED = (
  "none: a legacy torch.save file carries no checksum; give its SHA-256 (--sha256) to check it"
)


def verified_checkpoint(checkpoint: str, sha256: str = "") -> tuple[str, str]:
  """``(the file's SHA-256, the checks its bytes pass)``: a zip ``torch.save`` file's member
  CRCs (checked again when it is read) and ``sha256`` when given, which must equal the
  file's; a legacy file without ``sha256`` passes none (:data:`UNVERIFIED`).

  Raises:
    OfficialCheckpointError: the file's SHA-256 is not ``sha256``, or ``sha256`` is not 64
      hexadecimal digits.
  """
  if sha256 and not re.fullmatch(r"[0-9a-fA-F]{64}", sha256):
    raise OfficialCheckpointError(f"--sha256={sha256}: expected 64 hexadecimal digits")
  digest = fileio.file_digest(checkpoint)[1]
  if sha256 and digest != sha256.lower():
    raise OfficialCheckpointError(
      f"{checkpoint}: its SHA-256 is {digest}, not the {sha256.lower()} given: a damaged "
      "copy or another file than the one published"
    )
  checks = ["zip member CRCs"] if checkpoint_format(checkpoint) == "zip" else []
  checks += ["the given SHA-256"] if sha256 else []
  return digest, " and ".join(checks) or UNVERIFIED


def import_official(
  config: ml_collections.ConfigDict,
  checkpoint: str | os.PathLike,
  vocab_file: str | os.PathLike | None,
  workdir: str | os.PathLike,
  *,
  sha256: str = "",
  input_sha256: Sequence[str] = (),
  progress: bool = True,
) -> dict[str, Any]:
  """Writes ``workdir`` from the official ``checkpoint`` and its ``vocab_file``, for the
  run ``config`` describes (its data, loss and optimizer; the model fields come from the
  weights). Returns what ``import.json`` records. A VSE∞ checkpoint's vocabulary is the
  ``vocab.txt`` of ``config.text.pretrained`` (``vocab_file`` ``None`` or that file).

  ``sha256``: the checkpoint's published SHA-256, checked before anything is read (a
  legacy file has no other checksum; ``import.json``'s ``verified`` names the checks the
  file passed). The files the run reads besides the checkpoint (its data, concept files,
  WordNet, BERT folder) are verified first (:mod:`!jitr.experiment.pinned_inputs`: a
  damaged copy of a third-party file jitr knows is refused; ``input_sha256``: ``FILE=SHA256``
  entries each file must match) and pinned in the workdir's ``inputs.json``. Every check
  runs before anything is written; ``workdir`` must not exist or
  be empty, and is built in a temporary folder beside it that takes its name at the end
  (:func:`!jitr.folder_swap.atomic_folder`): an interrupted or failed import leaves no
  workdir behind. ``progress``: one line on stderr per step of :data:`IMPORT_STEPS` and
  one progress line of the steps done (:class:`jitr.progress.Steps`).

  Raises:
    OfficialCheckpointError / ValueError: a damaged or foreign checkpoint or vocabulary,
      another network or dataset than ``config``'s, an ``opt`` or vocabulary that
      disagrees with the weights, a non-empty ``workdir``, an input that is not the
      published file.
  """
  checkpoint, workdir = paths.absolute(checkpoint), paths.absolute(workdir)
  if paths.isdir(workdir) and paths.listdir(workdir):
    raise ValueError(f"{workdir}: not empty; jitr-import writes a new workdir")
  if paths.exists(workdir) and not paths.isdir(workdir):
    raise ValueError(f"{workdir}: not a directory")
  check_train_config(config)
  reads = config.copy_and_resolve_references()
  reads.vocab_file = ""  # its vocabulary is the workdir's vocab.json, pinned when written
  pins, _ = check_inputs(reads, workdir, given=given_digests(input_sha256))
  with Steps(IMPORT_STEPS, label="import", enabled=progress) as steps:
    begin = steps.begin
    begin("computing the checkpoint's sha256")
    digest, verified = verified_checkpoint(checkpoint, sha256)
    source = {"checkpoint": checkpoint, "sha256": digest, "verified": verified}
    return _import_steps(config, source, vocab_file, workdir, begin, pins)


def _import_steps(
  config,
  source: dict[str, str],
  vocab_file,
  workdir: str,
  begin: Callable[[str], None],
  pins: dict,
) -> dict[str, Any]:
  """The body of :func:`import_official` after the checkpoint's hash (``source``: its path,
  ``sha256`` and ``verified``); ``begin(name)`` before each of :data:`IMPORT_STEPS`;
  ``pins``: the verified inputs, pinned with the workdir."""
  checkpoint = source["checkpoint"]
  begin("reading the checkpoint")
  weights = read_official_weights(checkpoint)
  config = with_official_caption_form(config, weights.network)  # CVSE's str(bytes) captions
  config = resolved_config(with_official_tokenizer(imported_config(config, weights, workdir)))
  check_train_config(config)
  begin("reading the vocabulary")
  vocab = imported_vocab(config, weights, vocab_file)
  begin("loading data")
  data = load_data(config, workdir_lib.data_dir(config, workdir), teachers=False, vocab=vocab)
  train = data.splits["train"]
  if train.images.shape[-1] != weights.img_dim:
    raise ValueError(
      f"config.precomp_root: the {config.dataset} features have {train.images.shape[-1]} "
      f"dimensions, the checkpoint's image encoder takes {weights.img_dim}"
    )
  begin("checking the weights against config.model")
  constants = dataset_constants(data.concepts)
  weights.official.check_constants(
    config.model, weights.converted, constants, constant_origins(config)
  )
  steps = template_steps(train, config.batch_size)
  _, like = initial_state(config, len(vocab), train, steps, constants, shapes_only=True)
  converted = imported_variables(weights.converted)
  mismatch = shape_mismatch(converted, like.variables)
  if mismatch is not None:
    raise ValueError(f"{checkpoint}: its weights do not fit config.model: {mismatch}")
  state = training.create_train_state(converted, like.tx, like.rng)
  record = {
    **source,
    "vocab_file": paths.absolute(vocab.vocab_file if weights.wordpiece else vocab_file),
    "network": weights.network,
    **weights.record,
    "opt": {k: _plain(v) for k, v in sorted(weights.opt.items())},
  }
  # every check passed: only now is the workdir written, all of it or nothing
  begin("writing the workdir")
  with atomic_folder(workdir) as out:
    workdir_lib.record_config(config, out)
    vocab.save(os.path.join(out, "vocab.json"))
    with Checkpoints(out) as checkpoints:
      checkpoints.save_latest(state)
      best = weights.record.get("best_rsum")
      if isinstance(best, (int, float)):
        checkpoints.save_best(state, {checkpoints.best_metric: float(best)})
    fileio.write_json_atomic(os.path.join(out, IMPORT_RECORD), record, indent=2, sort_keys=True)
    vocab_pin = fingerprint(os.path.join(out, "vocab.json"))  # renamed with the folder
    pins[VOCAB_ROLE] = dataclasses.replace(vocab_pin, path=os.path.join(workdir, "vocab.json"))
    write_pins(out, pins)
  return record
