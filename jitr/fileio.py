"""Atomic file writes: a reader sees the old file or the complete new one, never half of it.

The one primitive is :func:`atomic_path`: it hands out a fresh temporary name
beside the target (``NAME.tmp-HOST-PID-XXXXXXXX``, same folder, so the final rename
never crosses a file system); when the ``with`` block completes the file is
fsynced and ``os.replace``-d onto the target (atomic on POSIX and Windows),
then the folder is fsynced. For a storage URL (``gs://...``, :mod:`jitr.paths`) the
temporary file is local and is uploaded when the block completes (a bucket's object
appears whole or not at all). If the block raises, the temporary file is removed
(or kept with ``keep_partial=True``, for resumable writers whose stale-file
cleanup reports unfinished ``*.tmp-*`` files); a full disk (``ENOSPC``) always
removes it and raises ``OSError(ENOSPC, "disk full: could not write PATH ...")``;
:func:`is_disk_full` also recognises the disk-full errors of libraries that do not raise
``OSError`` (TensorFlow's file writers, tensorstore under orbax) by their message.
:func:`write_bytes_atomic`,
:func:`write_text_atomic` and :func:`write_json_atomic` are the usual
conveniences on top of it; :func:`write_files_together` replaces several files together
or not at all (each written under a temporary name first, renamed only when all were).

A shared utility (like :mod:`jitr.tf_cpu`): any jitr subpackage may import it.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import re
import secrets
import shutil
import socket
import tempfile
from collections.abc import Iterator, Mapping
from typing import Any

from jitr import paths

__all__ = [
  "TEMP_MARKER",
  "atomic_path",
  "disk_full_error",
  "host_tag",
  "is_disk_full",
  "read_json",
  "read_json_header",
  "read_utf8_lines",
  "temp_name",
  "write_bytes_atomic",
  "write_files_together",
  "write_json_atomic",
  "write_text_atomic",
]

TEMP_MARKER = ".tmp-"
"""Temporary names are ``NAME + TEMP_MARKER + HOST-PID-RANDOM`` (glob ``*.tmp-*`` finds them)."""

PathLike = str | os.PathLike


def json_kind(value: Any) -> str:
  """The JSON name of a decoded value's type (object, array, string, ...), for messages."""
  if isinstance(value, dict):
    return "object"
  if isinstance(value, list):
    return "array"
  if isinstance(value, str):
    return "string"
  if isinstance(value, bool):
    return "boolean"
  if isinstance(value, (int, float)):
    return "number"
  return "null"


def host_tag() -> str:
  """This host's name as it appears in temporary file names (letters, digits, ``.``, ``_``)."""
  return re.sub(r"[^A-Za-z0-9.]", "_", socket.gethostname()) or "host"


def temp_name(path: str) -> str:
  """``PATH.tmp-HOST-PID-HEX``: unique across hosts sharing a folder, and processes."""
  return f"{path}{TEMP_MARKER}{host_tag()}-{os.getpid()}-{secrets.token_hex(4)}"


def _fresh_temp(path: str) -> str:
  """Creates (exclusively, mode 0o666 minus the umask) and returns an unused temp name."""
  for _ in range(100):
    tmp = temp_name(path)
    try:
      fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    except FileExistsError:
      continue
    os.close(fd)
    return tmp
  raise FileExistsError(f"{path}: could not create a free temporary name beside it")


def _fsync_file(path: str) -> None:
  fd = os.open(path, os.O_RDWR)
  try:
    os.fsync(fd)
  finally:
    os.close(fd)


def _fsync_folder(folder: str) -> None:
  """Makes the rename itself durable (POSIX; a no-op where folders cannot be opened)."""
  if not hasattr(os, "O_DIRECTORY"):
    return
  fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
  try:
    os.fsync(fd)
  except OSError:  # some file systems refuse fsync on a folder; the rename is still atomic
    pass
  finally:
    os.close(fd)


@contextlib.contextmanager
def atomic_path(path: PathLike, *, keep_partial: bool = False) -> Iterator[str]:
  """Yields a temporary path to write; on success it atomically becomes ``path``.

  Creates ``path``'s folder if needed. On an exception inside the block the
  temporary file is removed (``keep_partial=False``) or left for a later
  cleanup (``keep_partial=True``), and ``path`` is untouched.

  >>> import os, tempfile
  >>> target = os.path.join(tempfile.mkdtemp(), "out.txt")
  >>> with atomic_path(target) as tmp:
  ...   with open(tmp, "w") as f:
  ...     _ = f.write("done")
  ...   print(os.path.exists(target))
  False
  >>> open(target).read(), os.listdir(os.path.dirname(target))
  ('done', ['out.txt'])
  """
  if paths.is_url(path):
    with _uploaded_on_success(os.fspath(path)) as tmp:
      yield tmp
    return
  path = os.path.abspath(os.fspath(path))
  folder = os.path.dirname(path)
  os.makedirs(folder, exist_ok=True)
  tmp = _fresh_temp(path)
  try:
    yield tmp
    _fsync_file(tmp)
    os.replace(tmp, path)
  except BaseException as err:
    full = is_disk_full(err)
    if not keep_partial or full:
      with contextlib.suppress(FileNotFoundError):
        os.remove(tmp)
    if full:
      raise disk_full_error(path) from err
    raise
  _fsync_folder(folder)


@contextlib.contextmanager
def _uploaded_on_success(url: str) -> Iterator[str]:
  """A local temporary file that is copied to the storage URL ``url`` when the block
  completes (the object appears whole on close; a bucket has no folders to create first)
  and removed either way."""
  fd, tmp = tempfile.mkstemp(prefix=os.path.basename(url) + TEMP_MARKER)
  os.close(fd)
  try:
    yield tmp
    with open(tmp, "rb") as src, paths.open(url, "wb") as dst:
      shutil.copyfileobj(src, dst, 1 << 24)
  except BaseException as err:
    if is_disk_full(err):
      raise disk_full_error(url) from err
    raise
  finally:
    with contextlib.suppress(FileNotFoundError):
      os.remove(tmp)


# How a full disk reads in the messages of libraries that do not raise OSError(ENOSPC):
# the C library's text (TensorFlow, tensorstore) and the errno's name.
_DISK_FULL_TEXTS = (os.strerror(errno.ENOSPC), "No space left on device", "ENOSPC")


def is_disk_full(err: BaseException | None) -> bool:
  """Whether ``err``, or an exception it was raised from or during, is a full disk: an
  ``OSError`` with errno ``ENOSPC``, or any exception whose message says so (TensorFlow's
  ``ResourceExhaustedError``, orbax's ``ValueError`` from tensorstore)."""
  seen = set()
  while err is not None and id(err) not in seen:
    seen.add(id(err))
    if isinstance(err, OSError) and err.errno == errno.ENOSPC:
      return True
    if any(text in str(err) for text in _DISK_FULL_TEXTS):
      return True
    err = err.__cause__ or err.__context__
  return False


def disk_full_error(path: PathLike) -> OSError:
  """``OSError(ENOSPC)`` whose one line names ``path`` and the fix."""
  return OSError(
    errno.ENOSPC,
    f"disk full: could not write {os.fspath(path)} (temporary file removed); "
    "free space and run the same command again",
  )


def write_bytes_atomic(path: PathLike, data: bytes) -> None:
  """Writes ``data`` to ``path`` atomically (see :func:`atomic_path`)."""
  with atomic_path(path) as tmp, open(tmp, "wb") as f:
    f.write(data)


def write_text_atomic(path: PathLike, text: str, *, encoding: str = "utf-8") -> None:
  """Writes ``text`` to ``path`` atomically (UTF-8 by default, no newline translation)."""
  write_bytes_atomic(path, text.encode(encoding))


def write_json_atomic(
  path: PathLike,
  obj: Any,
  *,
  indent: int | None = 2,
  sort_keys: bool = True,
  ensure_ascii: bool = True,
  allow_nan: bool = True,
) -> None:
  """``json.dumps(obj, ...) + "\\n"`` written atomically; the keywords are ``json.dumps``'s.

  Serialisation happens before anything is written, so an object that cannot
  be encoded (or a NaN with ``allow_nan=False``) leaves ``path`` untouched.
  """
  text = json.dumps(
    obj, indent=indent, sort_keys=sort_keys, ensure_ascii=ensure_ascii, allow_nan=allow_nan
  )
  write_text_atomic(path, text + "\n")


def write_files_together(files: Mapping[str, bytes]) -> None:
  """Writes ``files`` (``{path: bytes}``) so that they are replaced together or not at all.

  Every file is first written whole under a temporary name beside its target
  (:func:`temp_name`; a storage URL's as a temporary object beside it) and fsynced. Only
  when every write succeeded does each take its target's name, the previous file kept
  (a hard link, or a copy) until all have; a rename that fails puts every previous file
  back. Whatever fails, no temporary file is left and every target holds what it held
  before; a full disk (``ENOSPC``) raises ``OSError(ENOSPC, "disk full: could not write
  PATH ...")`` naming the file (:func:`disk_full_error`). Between the first and the last
  rename a reader may find some files new and the others not yet.
  """
  staged: dict[str, str] = {}
  try:
    for target, data in files.items():
      try:
        staged[target] = _staged(target, data)
      except BaseException as err:
        if is_disk_full(err):
          raise disk_full_error(target) from err
        raise
    _rename_all(staged)
  except BaseException:
    for tmp in staged.values():
      _remove_quietly(tmp)
    raise


def _staged(path: str, data: bytes) -> str:
  """Writes ``data`` to a fresh temporary name beside ``path`` (fsynced when local) and
  returns that name; a failed write leaves none."""
  if paths.is_url(path):
    tmp = temp_name(path)
    try:
      with paths.open(tmp, "wb") as f:
        f.write(data)
    except BaseException:
      _remove_quietly(tmp)
      raise
    return tmp
  os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
  tmp = _fresh_temp(os.path.abspath(path))
  try:
    with open(tmp, "wb") as f:
      f.write(data)
    _fsync_file(tmp)
  except BaseException:
    _remove_quietly(tmp)
    raise
  return tmp


def _kept(path: str) -> str | None:
  """A temporary copy of the file ``path`` beside it (a hard link where the file system
  makes one), so the target is never absent while it is replaced; ``None`` when there is
  no file."""
  if not paths.exists(path):
    return None
  backup = temp_name(path)
  if not paths.is_url(path):
    try:
      os.link(path, backup)
      return backup
    except OSError:
      pass
  try:
    with paths.open(path, "rb") as src, paths.open(backup, "wb") as dst:
      shutil.copyfileobj(src, dst, 1 << 24)
  except BaseException:
    _remove_quietly(backup)
    raise
  return backup


def _rename_all(staged: Mapping[str, str]) -> None:
  """Moves each temporary file of ``staged`` (``{target: temporary}``) onto its target;
  if one move fails, the targets already moved get their previous files back (or are
  removed, where there was none). The kept previous files are removed at the end."""
  done: list[tuple[str, str | None]] = []
  current, backup = "", None
  try:
    for current, tmp in staged.items():
      backup = _kept(current)
      paths.replace(tmp, current)
      done.append((current, backup))
      backup = None
  except BaseException as err:
    if backup is not None:  # its move failed: the target still holds its previous file
      _remove_quietly(backup)
    for target, previous in reversed(done):
      with contextlib.suppress(OSError):
        if previous is not None:
          paths.replace(previous, target)
        else:  # there was no file before
          paths.remove(target)
    if is_disk_full(err):
      raise disk_full_error(current) from err
    raise
  for _, previous in done:
    if previous is not None:
      _remove_quietly(previous)
  for folder in dict.fromkeys(os.path.dirname(t) for t in staged if not paths.is_url(t)):
    _fsync_folder(os.path.abspath(folder))


def _remove_quietly(path: str) -> None:
  """Removes the file ``path`` if it is there (a temporary file being cleaned up)."""
  with contextlib.suppress(OSError):
    paths.remove(path)


def read_utf8_lines(path: PathLike) -> list[str]:
  """The lines of a UTF-8 text file, split on ``\\n`` (a final newline ends the last
  line; ``\\r`` of CRLF files is kept for the caller to strip).

  Raises:
    UnicodeError: a line is not UTF-8 or holds a NUL character (no text file does: a
      damaged or binary file); the message names the file, line, column and byte.
  """
  with paths.open(path, "rb") as f:
    raw = f.read().split(b"\n")
  if raw and raw[-1] == b"":
    raw.pop()  # the final newline
  lines = []
  for i, line in enumerate(raw):
    where = f"{os.fspath(path)}:{i + 1}: line {i + 1}"
    try:
      lines.append(line.decode("utf-8"))
    except UnicodeDecodeError as err:
      raise UnicodeError(
        f"{where} is not UTF-8 (byte {line[err.start]:#04x} at column {err.start + 1}); "
        "expected UTF-8 text"
      ) from None
    nul = line.find(b"\0")
    if nul >= 0:
      raise UnicodeError(
        f"{where} holds a NUL character (byte 0x00 at column {nul + 1}); expected UTF-8 text"
      )
  return lines


def read_json(path: PathLike, *, error: type[Exception] = ValueError, hint: str = "") -> Any:
  """The JSON value in a UTF-8 file; one line naming the file when it cannot be read:
  ``PATH:LINE: not valid JSON (MESSAGE, column C)HINT`` or ``PATH: not UTF-8 (byte offset
  N); expected JSONHINT``, raised as ``error`` (``hint`` says what to do, e.g. ``"; delete
  the folder and re-run"``). The caller checks the value's shape and whether the file
  exists.
  """
  path = os.fspath(path)
  try:
    with paths.open(path, "rb") as f:
      return json.loads(f.read().decode("utf-8"))
  except UnicodeDecodeError as err:
    raise error(f"{path}: not UTF-8 (byte offset {err.start}); expected JSON{hint}") from None
  except json.JSONDecodeError as err:
    raise error(
      f"{path}:{err.lineno}: not valid JSON ({err.msg}, column {err.colno}){hint}"
    ) from None


def read_json_header(
  path: PathLike,
  file_format: str,
  *,
  error: type[Exception] = ValueError,
  mismatch_error: type[Exception] | None = None,
  hint: str = "",
) -> dict[str, Any]:
  """A header file: a JSON object whose field ``format`` is ``file_format``. A file that is
  not JSON raises ``error`` (:func:`read_json`); another value or format raises
  ``mismatch_error`` (default ``error``): ``PATH: field 'format' is GOT, expected FORMAT``.
  """
  header = read_json(path, error=error, hint=hint)
  if not isinstance(header, dict) or header.get("format") != file_format:
    got = header.get("format") if isinstance(header, dict) else type(header).__name__
    raise (mismatch_error or error)(
      f"{os.fspath(path)}: field 'format' is {got!r}, expected {file_format!r}"
    )
  return header


def file_digest(path: str, *, chunk_bytes: int = 1 << 20) -> tuple[int, str]:
  """``(size in bytes, sha256 hex)`` of the file at ``path``, read ``chunk_bytes`` at a time
  (the checksum of checkpoint manifests, relevance shards and stored embeddings)."""
  digest, size = hashlib.sha256(), 0
  with paths.open(path, "rb") as f:
    while chunk := f.read(chunk_bytes):
      digest.update(chunk)
      size += len(chunk)
  return size, digest.hexdigest()
