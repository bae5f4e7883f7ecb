"""Whether an image folder with Karpathy's split file is usable, before training on it.

:func:`check_image_folder` reads the split file (:func:`jitr.relevance.karpathy_json.read_karpathy`:
a file without images, an image without its split, captions or file name, an image
named twice: one line) and opens every image with PIL as training does
(:func:`jitr.data.image_files.open_image`, decoded whole: a truncated JPEG fails); each
missing or unreadable image is one line of :attr:`!FolderCheck.problems`. Per split it
counts the images, the captions (the fewest and most of an image) and whether every image
has the captions a run keeps. Nothing is written.
"""

from __future__ import annotations

import dataclasses
import os

from jitr.data.image_files import decode_pool, open_image
from jitr.relevance.karpathy_json import read_karpathy


@dataclasses.dataclass(frozen=True)
class SplitImages:
  """One split of the file: ``images``, ``captions`` and the fewest and most captions of an
  image."""

  split: str
  images: int
  captions: int
  fewest: int
  most: int


@dataclasses.dataclass(frozen=True)
class FolderCheck:
  """The splits in file order and one line per problem (``[]``: usable)."""

  splits: tuple[SplitImages, ...]
  problems: tuple[str, ...]


def _readable(path: str) -> str | None:
  """``None`` when ``path`` decodes as an image, else the one-line reason."""
  try:
    size = open_image(path).size
  except ValueError as err:
    return str(err)
  return None if min(size) > 0 else f"{path}: an empty image"


def check_image_folder(json_path: str, images: str, captions_per_image: int = 5) -> FolderCheck:
  """The :class:`FolderCheck` of the split file ``json_path`` and its image folder
  ``images``; an image of fewer than ``captions_per_image`` captions is a problem.

  Raises:
    ValueError: the split file is not one (one line naming it and the image).
  """
  entries = read_karpathy(json_path)
  files = [os.path.join(images, entry.file) for entry in entries]
  problems = [line for line in decode_pool().map(_readable, files) if line]
  for entry in entries:
    if len(entry.captions) < captions_per_image:
      problems.append(
        f"{json_path}: {entry.file} has {len(entry.captions)} captions, a run keeps "
        f"{captions_per_image}"
      )
  splits = {}
  for entry in entries:
    splits.setdefault(entry.split, []).append(len(entry.captions))
  rows = tuple(
    SplitImages(name, len(counts), sum(counts), min(counts), max(counts))
    for name, counts in splits.items()
  )
  return FolderCheck(rows, tuple(problems))


def format_folder_check(check: FolderCheck) -> str:
  """The check as one Markdown table (a row per split) and its verdict."""
  lines = [
    "| split | images | captions | captions per image |",
    "|---|---|---|---|",
  ]
  for row in check.splits:
    per_image = str(row.fewest) if row.fewest == row.most else f"{row.fewest}–{row.most}"
    lines.append(f"| {row.split} | {row.images:,} | {row.captions:,} | {per_image} |")
  bad = len(check.problems)
  lines.append("")
  lines.append("every image reads" if not bad else f"{bad} problem{'s' * (bad > 1)} (stderr)")
  return "\n".join(lines)
