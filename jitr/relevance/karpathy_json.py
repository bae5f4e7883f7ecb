"""Karpathy's split files (``dataset_flickr30k.json``, ``dataset_coco.json``,
``dataset_flickr8k.json``): images, their split and their captions.

The file is ``{"images": [IMAGE, ...], "dataset": NAME}`` with each ``IMAGE``
``{"filename": F, "split": S, "sentences": [{"raw": CAPTION, ...}, ...]}`` and, for COCO,
``"filepath"`` (the image's sub-folder, ``train2014`` / ``val2014``); ``imgid`` / ``cocoid``
number the images. An image's file is ``<filepath>/<filename>`` (``filename`` alone without
a filepath), relative to the image folder. Splits are what the file says: ``train``,
``val``, ``test`` and, for COCO, ``restval`` (the 30,504 validation images Karpathy adds to
training).

:func:`read_karpathy` checks the file (one line naming it and the image for each fault);
:func:`karpathy_captions` gives the captions of some splits, the first
``captions_per_image`` of each image (COCO has images of 6 and 7 captions; the usual 5 are
the first), flat, in file order: what :func:`jitr.relevance.captions_io.read_captions`
numbers as a precomp caption file (image ``i``: ``str(i)``, caption ``j``: ``str(j)``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from jitr import fileio


class CaptionFileError(ValueError):
  """A split file is not what Karpathy's are (the caption readers raise it as theirs)."""


@dataclasses.dataclass(frozen=True)
class KarpathyImage:
  """One image of a split file: its ``file`` (relative to the image folder), ``split``
  and ``captions`` (the ``raw`` sentences, stripped, in file order)."""

  file: str
  split: str
  captions: tuple[str, ...]


def _image(entry: object, index: int, path: str) -> KarpathyImage:
  """``images[index]`` of the file ``path``, checked."""
  where = f"{path}: images[{index}]"
  if not isinstance(entry, dict):
    raise CaptionFileError(f"{where}: expected an object, got {fileio.json_kind(entry)}")
  filename = entry.get("filename")
  if not isinstance(filename, str) or not filename:
    raise CaptionFileError(f"{where}: expected a 'filename' string")
  where = f"{where} ({filename})"
  split = entry.get("split")
  if not isinstance(split, str) or not split:
    raise CaptionFileError(f"{where}: no 'split' (expected 'train', 'val', 'test', ...)")
  sentences = entry.get("sentences")
  if not isinstance(sentences, list) or not sentences:
    raise CaptionFileError(f"{where}: expected 'sentences', a non-empty list")
  captions = []
  for k, sentence in enumerate(sentences):
    raw = sentence.get("raw") if isinstance(sentence, dict) else None
    if not isinstance(raw, str) or not raw.strip():
      raise CaptionFileError(f"{where}: sentences[{k}] has no non-empty 'raw' caption")
    captions.append(raw.strip())
  filepath = entry.get("filepath", "")
  if not isinstance(filepath, str):
    raise CaptionFileError(f"{where}: 'filepath' must be a string")
  file = f"{filepath}/{filename}" if filepath else filename
  return KarpathyImage(file, split, tuple(captions))


def read_karpathy(path: str) -> list[KarpathyImage]:
  """The images of the split file ``path``, in file order.

  Raises:
    CaptionFileError: (one line naming the file and the image) the file is not an object
      with an ``images`` list, an image lacks its filename, split or captions, or two
      entries name one image (the same file, or the same ``imgid`` / ``cocoid``).
  """
  data = fileio.read_json(path, error=CaptionFileError)
  images = data.get("images") if isinstance(data, dict) else None
  if not isinstance(images, list) or not images:
    raise CaptionFileError(f"{path}: expected {{'images': [...]}} (a Karpathy split file)")
  out, files, ids = [], {}, {}
  for index, entry in enumerate(images):
    image = _image(entry, index, path)
    if image.file in files:
      raise CaptionFileError(
        f"{path}: images[{index}] names {image.file}, as images[{files[image.file]}] does"
      )
    files[image.file] = index
    for key in ("imgid", "cocoid"):
      value = entry.get(key)
      if value is None:
        continue
      if (key, value) in ids:
        raise CaptionFileError(
          f"{path}: images[{index}] ({image.file}) has {key} {value}, as "
          f"images[{ids[key, value]}] does"
        )
      ids[key, value] = index
    out.append(image)
  return out


def split_images(
  images: Sequence[KarpathyImage], splits: Sequence[str], source: str
) -> list[KarpathyImage]:
  """The images of any of ``splits``, in file order; none is refused naming ``source``."""
  kept = [image for image in images if image.split in splits]
  if not kept:
    found = sorted({image.split for image in images})
    raise CaptionFileError(
      f"{source}: no image of split {'/'.join(splits)} (the file has {', '.join(found)})"
    )
  return kept


def kept_captions(images: Sequence[KarpathyImage], captions_per_image: int, source: str) -> list:
  """The first ``captions_per_image`` captions of each image, flat, in order; an image with
  fewer is refused in one line naming it."""
  out = []
  for image in images:
    if len(image.captions) < captions_per_image:
      raise CaptionFileError(
        f"{source}: {image.file} has {len(image.captions)} captions, expected at least "
        f"{captions_per_image} (config.captions_per_image)"
      )
    out.extend(image.captions[:captions_per_image])
  return out


def karpathy_captions(
  path: str, splits: Sequence[str] = ("train", "restval"), captions_per_image: int = 5
) -> list[str]:
  """The captions of the images of ``splits`` in the split file ``path``, the first
  ``captions_per_image`` of each, flat (module docstring)."""
  images = split_images(read_karpathy(path), splits, path)
  return kept_captions(images, captions_per_image, path)
