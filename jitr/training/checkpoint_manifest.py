"""``jitr_manifest.json``: the size and SHA-256 of every file of a saved checkpoint step.

A step folder is trusted only when its manifest is present and every file it lists has
the listed size and digest. The manifest is written after the checkpoint is complete
(orbax finished and committed), last and atomically, so a save interrupted at any point
leaves a step without a manifest: never trusted.

* :func:`build_manifest` -- ``{"format": 1, "files": {relpath: {"size", "sha256"}}}`` of
  every file under a step folder (the manifest itself excluded), hashed in chunks.
* :func:`write_manifest` -- that manifest written into the folder atomically (temporary
  file, fsync, ``os.replace``, folder fsync).
* :func:`verify_manifest` -- ``None`` when the folder matches its manifest, else one
  reason naming the file.
"""

from __future__ import annotations

import os
from typing import Any

from jitr import fileio, paths
from jitr.fileio import file_digest

MANIFEST_NAME = "jitr_manifest.json"
MANIFEST_FORMAT = 1


def step_files(step_dir: str) -> list[str]:
  """The ``/``-separated paths, relative to ``step_dir`` and sorted, of every file under it
  except the manifest and its temporary files."""
  found = []
  for folder, dirs, files in paths.walk(step_dir):
    dirs.sort()
    for name in files:
      rel = os.path.relpath(os.path.join(folder, name), step_dir).replace(os.sep, "/")
      if not rel.startswith(MANIFEST_NAME):
        found.append(rel)
  return sorted(found)


def build_manifest(step_dir: str) -> dict[str, Any]:
  """``{"format": 1, "files": {relpath: {"size": n, "sha256": hex}}}`` of ``step_dir``."""
  files = {}
  for rel in step_files(step_dir):
    size, sha = file_digest(os.path.join(step_dir, rel))
    files[rel] = {"size": size, "sha256": sha}
  return {"format": MANIFEST_FORMAT, "files": files}


def write_manifest(step_dir: str) -> str:
  """Writes :func:`build_manifest` of ``step_dir`` to ``step_dir/jitr_manifest.json``
  atomically; returns its path."""
  path = os.path.join(step_dir, MANIFEST_NAME)
  fileio.write_json_atomic(path, build_manifest(step_dir), indent=1, sort_keys=True)
  return path


def _listed_files(manifest: Any, path: str) -> dict[str, dict[str, Any]] | str:
  """The manifest's ``files`` table, or why ``manifest`` (read from ``path``) is not one."""
  if not isinstance(manifest, dict) or manifest.get("format") != MANIFEST_FORMAT:
    got = manifest.get("format") if isinstance(manifest, dict) else type(manifest).__name__
    return f"{path}: field 'format' is {got!r}, expected {MANIFEST_FORMAT}"
  files = manifest.get("files")
  if not isinstance(files, dict) or not files:
    return f"{path}: field 'files' is not a non-empty table of files"
  for rel, entry in files.items():
    if (
      not isinstance(entry, dict)
      or not isinstance(entry.get("size"), int)
      or not isinstance(entry.get("sha256"), str)
    ):
      return f"{path}: entry {rel!r} is not {{'size': int, 'sha256': str}}"
  return files


def verify_manifest(step_dir: str) -> str | None:
  """``None`` when every file that ``step_dir/jitr_manifest.json`` lists exists with its
  listed size and SHA-256; otherwise the first reason, naming the file: the manifest is
  missing or unreadable, a listed file is missing, its size differs, its sha256 differs.
  Files not listed are ignored. Sizes are checked for every file before any is hashed."""
  path = os.path.join(step_dir, MANIFEST_NAME)
  if not paths.isfile(path):
    return f"{path}: missing (an interrupted save, or a checkpoint saved without one)"
  try:
    manifest = fileio.read_json(path)
  except (OSError, ValueError) as err:
    return str(err)
  files = _listed_files(manifest, path)
  if isinstance(files, str):
    return files
  for rel, entry in sorted(files.items()):
    file_path = os.path.join(step_dir, *rel.split("/"))
    if not paths.isfile(file_path):
      return f"{file_path}: missing (listed in {MANIFEST_NAME})"
    size = paths.getsize(file_path)
    if size != entry["size"]:
      return f"{file_path}: size is {size} bytes, {MANIFEST_NAME} lists {entry['size']}"
  for rel, entry in sorted(files.items()):
    file_path = os.path.join(step_dir, *rel.split("/"))
    size, sha = file_digest(file_path)
    if size != entry["size"]:
      return f"{file_path}: size is {size} bytes, {MANIFEST_NAME} lists {entry['size']}"
    if sha != entry["sha256"]:
      return (
        f"{file_path}: sha256 differs from {MANIFEST_NAME} "
        f"(got {sha[:12]}..., expected {entry['sha256'][:12]}...)"
      )
  return None
