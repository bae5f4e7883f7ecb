"""Reading an official PyTorch checkpoint (a ``torch.save`` file) or refusing it in one line.

Before ``torch.load`` the file is checked for what a ``torch.save`` file is: a zip
(``PK\\x03\\x04``, every member's CRC must match, a ``data.pkl`` member must exist) or a
legacy save (a pickled magic number, then four complete pickles: protocol, system
info, the object, the storage keys). Loading is ``weights_only=True`` with only
``argparse.Namespace`` (the saved ``opt``) allowed beyond tensors and containers. A
missing, empty, truncated, damaged or foreign file, an object the weights-only loader
refuses (a class instance, a function: "holds objects jitr does not unpickle", never
called damaged) and a non-finite weight all raise :class:`OfficialCheckpointError`: one
line that names the path and what was expected; torch's advice to turn ``weights_only``
off never reaches the message.
"""

from __future__ import annotations

import argparse
import io
import os
import pickle
import pickletools
import re
import zipfile
import zlib
from collections.abc import Mapping
from typing import Any

import numpy as np

from jitr import paths

EXPECTED = "expected a torch.save file: zip or legacy"
_ZIP_MAGIC = b"PK\x03\x04"
# ``torch.serialization.MAGIC_NUMBER``: the first pickle of a legacy (non-zip) save.
_LEGACY_MAGIC = 0x1950A86A20F9469CFC6C
_LEGACY_HEADS = tuple(pickle.dumps(_LEGACY_MAGIC, protocol=p) for p in range(6))
_LEGACY_PICKLES = 4  # protocol version, system info, the object, the storage keys
# What torch's weights-only unpickler says when it refuses an object it does not build
# (a global not allowed, one of a blocked module such as os or subprocess, a class
# instance, a call of a function), each with the object's name in its first group.
_REFUSALS = (
  re.compile(r"Unsupported global: GLOBAL (\S+) was not an allowed global"),
  re.compile(r"unsupported GLOBAL (\S+) whose module \S+ is blocked"),
  re.compile(r"Can only create new object for \S+ or classes allowlisted via \S+ but got (.+?)$"),
  re.compile(
    r"Can only build Tensor, Parameter, OrderedDict or types allowlisted via \S+, but got (.+?)$"
  ),
  re.compile(r"Trying to call reduce for unrecognized function (.+?)$"),
)
_MAX_NAMED_KEYS = 5


class OfficialCheckpointError(ValueError):
  """An official checkpoint that is refused: missing, empty, truncated, damaged, not a
  ``torch.save`` file, holding a global other than ``argparse.Namespace``, or holding
  non-finite weights. The message is one line naming the path."""


class RefusedGlobalError(OfficialCheckpointError, pickle.UnpicklingError):
  """A checkpoint whose pickle names a global that weights-only loading refuses; also a
  :class:`pickle.UnpicklingError`, what ``torch.load`` itself raises for it. ``refused``:
  the object's name (``'posix.system'``)."""

  def __init__(self, message: str, refused: str = ""):
    super().__init__(message)
    self.refused = refused


def _one_line(text: str) -> str:
  return " ".join(text.split())


def _file_head(path: str, n: int = 64) -> bytes:
  """The first ``n`` bytes of ``path``; a missing, non-regular or unreadable path is refused."""
  if not paths.exists(path):
    raise OfficialCheckpointError(f"{path}: no such file ({EXPECTED})")
  if not paths.isfile(path):
    raise OfficialCheckpointError(f"{path}: not a regular file ({EXPECTED})")
  try:
    with paths.open(path, "rb") as f:
      return f.read(n)
  except OSError as e:
    raise OfficialCheckpointError(f"{path}: cannot be read ({e.strerror or e})") from None


def checkpoint_format(path: str | os.PathLike) -> str:
  """``"zip"`` or ``"legacy"``: which ``torch.save`` layout the first bytes of ``path``
  start; a missing, empty or foreign file, or one cut inside the legacy magic, is refused."""
  path = os.fspath(path)
  head = _file_head(path)
  if not head:
    raise OfficialCheckpointError(f"{path}: empty file, not a PyTorch checkpoint ({EXPECTED})")
  if head.startswith(_ZIP_MAGIC):
    return "zip"
  if any(head.startswith(magic) for magic in _LEGACY_HEADS):
    return "legacy"
  if len(head) < max(map(len, _LEGACY_HEADS)) and any(m.startswith(head) for m in _LEGACY_HEADS):
    raise OfficialCheckpointError(
      f"{path}: truncated PyTorch checkpoint (a legacy torch.save file cut after {len(head)} "
      "bytes, inside its magic number)"
    )
  raise OfficialCheckpointError(f"{path}: not a PyTorch checkpoint ({EXPECTED})")


def check_zip_members(path: str | os.PathLike) -> None:
  """Reads every member of a zip ``torch.save`` file: the zip directory must be readable,
  each member's CRC must match and a ``data.pkl`` member must exist."""
  path = os.fspath(path)
  errors = (zipfile.BadZipFile, zlib.error, EOFError, OSError, ValueError, NotImplementedError)
  damaged = f"{path}: truncated or damaged PyTorch checkpoint (zip torch.save file"
  with paths.open(path, "rb") as f:
    try:
      archive = zipfile.ZipFile(f)
    except errors:
      raise OfficialCheckpointError(
        f"{damaged} without a readable zip directory at its end: cut short or overwritten)"
      ) from None
    with archive:
      names = archive.namelist()
      try:
        bad = archive.testzip()
      except errors as e:
        raise OfficialCheckpointError(
          f"{damaged}, a member cannot be read: {_one_line(str(e))})"
        ) from None
  if bad is not None:
    raise OfficialCheckpointError(
      f"{path}: damaged PyTorch checkpoint: zip member {bad!r} fails its CRC check"
    )
  if not any(name == "data.pkl" or name.endswith("/data.pkl") for name in names):
    raise OfficialCheckpointError(
      f"{path}: not a PyTorch checkpoint (a zip without a data.pkl member; {EXPECTED})"
    )


class _BoundedReader:
  """A binary file whose ``read(n)`` never asks for more than the bytes left, so a
  damaged length field cannot make a pickle walk allocate beyond the file's size."""

  def __init__(self, f: io.BufferedIOBase, size: int):
    self.f, self.size = f, size

  def read(self, n: int = -1) -> bytes:
    left = max(self.size - self.f.tell(), 0)
    return self.f.read(left if n < 0 else min(n, left))

  def readline(self) -> bytes:
    return self.f.readline()

  def tell(self) -> int:
    return self.f.tell()


def _skip_pickle(f: _BoundedReader) -> None:
  """Walks one pickle's opcodes up to STOP without building any object."""
  for _ in pickletools.genops(f):
    pass


def check_legacy_pickles(path: str | os.PathLike) -> None:
  """Walks the pickles of a legacy ``torch.save`` file (magic number, protocol, system
  info, object, storage keys) opcode by opcode; each must be complete."""
  path = os.fspath(path)
  with paths.open(path, "rb") as f:
    reader = _BoundedReader(f, paths.getsize(path))
    for k in range(1 + _LEGACY_PICKLES):
      try:
        _skip_pickle(reader)
      except Exception as e:  # genops raises ValueError for a cut or unknown opcode
        raise OfficialCheckpointError(
          f"{path}: truncated or damaged PyTorch checkpoint (legacy torch.save file, pickle "
          f"{k + 1} of {1 + _LEGACY_PICKLES}: {_one_line(str(e))})"
        ) from None


def refused_object(message: str) -> str | None:
  """The name of the object whose unpickling torch's weights-only loader refused, read
  from its error ``message`` (:data:`_REFUSALS`), or ``None`` for another error."""
  for line in message.splitlines():
    for pattern in _REFUSALS:
      found = pattern.search(line.strip())
      if found:
        name = found.group(1).rstrip(".")
        return re.sub(r"^<class '(.*)'>$", r"\1", name)  # a class as torch prints it
  return None


def _torch_reason(exc: BaseException) -> str:
  """The cause in torch's message, one short line, without its ``weights_only`` advice."""
  text = str(exc)
  inner = re.search(r"WeightsUnpickler error:(.*?)(?:Check the documentation|$)", text, re.S)
  if inner:
    text = inner.group(1)
  text = re.split(r"\.\s|Please use|Re-running|If you are seeing", _one_line(text))[0].strip()
  if not text or "weights_only" in text:
    return type(exc).__name__
  return f"{type(exc).__name__}: {text[:160]}"


def _torch_load(path: str, fmt: str) -> Any:
  """``torch.load(path, weights_only=True)`` with ``argparse.Namespace`` allowed; each
  failure becomes one :class:`OfficialCheckpointError` line, as does a missing PyTorch."""
  try:
    import torch
  except ModuleNotFoundError:
    raise OfficialCheckpointError(
      f"{path}: reading a PyTorch checkpoint needs PyTorch, which is not installed; install "
      "it with: pip install 'jitr[torch]'"
    ) from None

  try:
    with torch.serialization.safe_globals([argparse.Namespace]):
      if paths.is_url(path):  # torch reads a seekable file: the object, read whole
        with paths.open(path, "rb") as f:
          return torch.load(io.BytesIO(f.read()), map_location="cpu", weights_only=True)
      return torch.load(path, map_location="cpu", weights_only=True)
  except Exception as e:
    refused = refused_object(str(e)) if isinstance(e, pickle.UnpicklingError) else None
    if refused:
      raise RefusedGlobalError(
        f"{path}: holds objects jitr does not unpickle (refused to unpickle {refused!r}); an "
        "official checkpoint holds only tensors, containers and argparse.Namespace; the file "
        "is intact, but not such a checkpoint",
        refused,
      ) from None
    raise OfficialCheckpointError(
      f"{path}: truncated or damaged PyTorch checkpoint ({fmt} torch.save file: {_torch_reason(e)})"
    ) from None


def load_checkpoint(path: str | os.PathLike) -> Any:
  """The object a ``torch.save`` file at ``path`` holds, read with ``weights_only=True``
  after its layout is checked (zip: every member's CRC; legacy: every pickle complete)."""
  path = os.fspath(path)
  fmt = checkpoint_format(path)
  if fmt == "zip":
    check_zip_members(path)
  else:
    check_legacy_pickles(path)
  return _torch_load(path, fmt)


def non_finite_counts(state: Mapping[str, Any]) -> dict[str, tuple[int, int]]:
  """``{key: (non-finite count, size)}`` over the floating tensors / arrays of ``state``
  that hold a NaN or an infinity."""
  counts = {}
  for key, value in state.items():
    if hasattr(value, "detach"):  # a torch.Tensor
      if not value.is_floating_point():
        continue
      bad, size = int((~value.detach().isfinite()).sum()), value.numel()
    else:
      array = np.asarray(value)
      if not np.issubdtype(array.dtype, np.floating):
        continue
      bad, size = int((~np.isfinite(array)).sum()), array.size
    if bad:
      counts[key] = (bad, size)
  return counts


def refuse_non_finite(path: str | os.PathLike, state: Mapping[str, Any]) -> None:
  """Refuses ``state`` (read from ``path``) when a floating value is NaN or infinite,
  naming each such key and its count."""
  counts = non_finite_counts(state)
  if not counts:
    return
  named = [f"{k!r} ({bad} of {size})" for k, (bad, size) in list(counts.items())[:_MAX_NAMED_KEYS]]
  more = len(counts) - len(named)
  tail = f" and {more} more keys" if more else ""
  raise OfficialCheckpointError(
    f"{os.fspath(path)}: non-finite weights (NaN or inf) in {', '.join(named)}{tail}; "
    "expected finite floating tensors"
  )
