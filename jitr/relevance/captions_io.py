"""Caption files -> :class:`CaptionSet` (images, their captions, a fingerprint).

Two formats are read:

* **precomp** (``*_caps.txt`` of the VSE++/SCAN ``*_precomp`` folders): one caption
  per line, ``captions_per_image`` (5) consecutive lines per image. Image ``i``
  has id ``str(i)``; caption ``j`` (0-based line number) has id ``str(j)``.
* **flickr8k** (``Flickr8k.token.txt``): ``IMAGE.jpg#N<TAB>caption``. Image id =
  the part before ``#``; the file's one stray id ``X.jpg.1`` is the same image as
  ``X.jpg`` (it holds that image's fifth caption), so ``.jpg.<digits>`` is folded
  into ``.jpg``. Caption id = the full ``IMAGE.jpg#N`` field.

Images keep the order of their first appearance and captions their file order
within an image, so caption index ``j`` of the set is the ``j``-th caption of
this grouped order (for both real files: the line number).
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
from collections.abc import Sequence

import numpy as np

from jitr import fileio, paths
from jitr.relevance import karpathy_json

#: The caption file formats :func:`read_captions` reads (``auto``: :func:`detect_format`).
CAPTION_FORMATS = ("auto", "precomp", "flickr8k", "karpathy")
_FLICKR_LINE = re.compile(r"^([^\t#]+)#(\d+)\t(.*)$")
_STRAY_SUFFIX = re.compile(r"(\.jpg)\.\d+$", re.IGNORECASE)


class CaptionFileError(ValueError):
  """A caption file does not have the expected format."""


@dataclasses.dataclass(frozen=True)
class CaptionSet:
  """Captions grouped by image.

  Attributes:
    source: where the captions were read from (for messages).
    image_ids: ``[N_img]`` image ids.
    caption_ids: ``[N_cap]`` caption ids.
    captions: ``[N_cap]`` caption texts; the captions of image ``i`` are
      ``captions[image_offsets[i]:image_offsets[i + 1]]`` and are its references.
    image_offsets: ``[N_img + 1]`` int64, non-decreasing, ``0`` to ``N_cap``.
  """

  source: str
  image_ids: tuple[str, ...]
  caption_ids: tuple[str, ...]
  captions: tuple[str, ...]
  image_offsets: np.ndarray

  def __post_init__(self) -> None:
    offsets = np.asarray(self.image_offsets, dtype=np.int64)
    object.__setattr__(self, "image_offsets", offsets)
    if len(self.caption_ids) != len(self.captions):
      raise CaptionFileError(
        f"{self.source}: {len(self.caption_ids)} caption ids for {len(self.captions)} captions"
      )
    if (
      offsets.shape != (len(self.image_ids) + 1,)
      or offsets[0] != 0
      or offsets[-1] != len(self.captions)
    ):
      raise CaptionFileError(
        f"{self.source}: image_offsets must run from 0 to {len(self.captions)} "
        "with one entry per image + 1"
      )
    if np.any(np.diff(offsets) <= 0):
      bad = int(np.argmin(np.diff(offsets)))
      raise CaptionFileError(f"{self.source}: image {self.image_ids[bad]!r} has no captions")

  @property
  def num_images(self) -> int:
    return len(self.image_ids)

  @property
  def num_captions(self) -> int:
    return len(self.captions)

  @property
  def caption_image(self) -> np.ndarray:
    """``[N_cap]`` int64: the image index of every caption."""
    return np.repeat(np.arange(self.num_images, dtype=np.int64), np.diff(self.image_offsets))

  @property
  def captions_per_image(self) -> int | None:
    """The number of captions of every image when it is the same for all, else ``None``."""
    counts = np.unique(np.diff(self.image_offsets))
    return int(counts[0]) if counts.size == 1 else None

  def references(self, image: int) -> list[str]:
    """The reference captions of image index ``image``."""
    return list(self.captions[self.image_offsets[image] : self.image_offsets[image + 1]])

  def reference_sets(self) -> list[list[str]]:
    """The reference captions of every image."""
    return [self.references(i) for i in range(self.num_images)]

  def numbered(self) -> CaptionSet:
    """The same captions with the ids a precomp caption file gives them (image ``i``:
    ``str(i)``, caption ``j``: ``str(j)``), whose fingerprint is that of the file's records."""
    return dataclasses.replace(
      self,
      image_ids=tuple(str(i) for i in range(self.num_images)),
      caption_ids=tuple(str(j) for j in range(self.num_captions)),
    )

  def fingerprint(self) -> str:
    """``sha256`` of the caption list: ``image_id TAB caption_id TAB caption NEWLINE``
    per caption."""
    h = hashlib.sha256()
    image_of = self.caption_image
    for j, (cid, text) in enumerate(zip(self.caption_ids, self.captions)):
      h.update(f"{self.image_ids[image_of[j]]}\t{cid}\t{text}\n".encode())
    return h.hexdigest()

  def subset(self, images: Sequence[int]) -> CaptionSet:
    """The captions of the given image indices (in that order)."""
    ids, cids, caps, offsets = [], [], [], [0]
    for i in images:
      lo, hi = self.image_offsets[i], self.image_offsets[i + 1]
      ids.append(self.image_ids[i])
      cids.extend(self.caption_ids[lo:hi])
      caps.extend(self.captions[lo:hi])
      offsets.append(offsets[-1] + int(hi - lo))
    return CaptionSet(
      self.source, tuple(ids), tuple(cids), tuple(caps), np.asarray(offsets, np.int64)
    )


def _read_lines(path: str) -> list[str]:
  if not paths.isfile(path):
    raise CaptionFileError(f"{path}: caption file not found")
  try:
    lines = fileio.read_utf8_lines(path)
  except UnicodeError as err:
    raise CaptionFileError(str(err)) from None
  return [line.rstrip("\r") for line in lines]


def read_precomp_captions(path: str, captions_per_image: int = 5) -> CaptionSet:
  """Read a precomp ``*_caps.txt`` file: ``captions_per_image`` lines per image.

  Raises:
    CaptionFileError: the file is missing, has a line count that is not a
      multiple of ``captions_per_image``, or has an empty caption.
  """
  lines = _read_lines(path)
  if not lines:
    raise CaptionFileError(f"{path}: no captions (expected {captions_per_image} lines per image)")
  if len(lines) % captions_per_image:
    raise CaptionFileError(
      f"{path}: {len(lines)} caption lines is not a multiple of {captions_per_image} "
      f"(expected {captions_per_image} lines per image)"
    )
  for j, line in enumerate(lines):
    if not line.strip():
      raise CaptionFileError(
        f"{path}:{j + 1}: empty caption (expected a non-empty caption on every line)"
      )
  return precomp_caption_set(lines, captions_per_image, path)


def precomp_caption_set(texts: Sequence[str], captions_per_image: int, source: str) -> CaptionSet:
  """The :class:`CaptionSet` a precomp caption file of the lines ``texts`` reads as
  (:func:`read_precomp_captions`): ``captions_per_image`` consecutive captions per image,
  image ``i`` with id ``str(i)``, caption ``j`` with id ``str(j)``, each caption stripped."""
  n_img = len(texts) // captions_per_image
  return CaptionSet(
    source=source,
    image_ids=tuple(str(i) for i in range(n_img)),
    caption_ids=tuple(str(j) for j in range(len(texts))),
    captions=tuple(str(text).strip() for text in texts),
    image_offsets=np.arange(0, n_img * captions_per_image + 1, captions_per_image, dtype=np.int64),
  )


def normalize_flickr_image_id(image_id: str) -> str:
  """``X.jpg.1 -> X.jpg`` (the one stray id of Flickr8k.token.txt); other ids unchanged."""
  return _STRAY_SUFFIX.sub(r"\1", image_id)


def read_flickr8k_tokens(path: str) -> CaptionSet:
  """Read Flickr8k's ``Flickr8k.token.txt`` (``IMAGE.jpg#N<TAB>caption`` per line).

  Raises:
    CaptionFileError: a line is not ``ID#N<TAB>caption``, a caption is empty,
      or a caption id repeats.
  """
  lines = _read_lines(path)
  groups: dict[str, list[tuple[str, str]]] = {}
  seen: set[str] = set()
  for k, line in enumerate(lines):
    m = _FLICKR_LINE.match(line)
    if m is None:
      raise CaptionFileError(f"{path}:{k + 1}: expected 'IMAGE#N<TAB>caption', got {line[:80]!r}")
    image, caption = m.group(1), m.group(3).strip()
    cid = f"{image}#{m.group(2)}"
    if not caption:
      raise CaptionFileError(
        f"{path}:{k + 1}: empty caption for {cid} (expected a non-empty caption)"
      )
    if cid in seen:
      raise CaptionFileError(
        f"{path}:{k + 1}: caption id {cid} repeats (expected unique IMAGE#N ids)"
      )
    seen.add(cid)
    groups.setdefault(normalize_flickr_image_id(image), []).append((cid, caption))
  if not groups:
    raise CaptionFileError(f"{path}: no captions (expected 'IMAGE#N<TAB>caption' lines)")
  cids = [c for g in groups.values() for c, _ in g]
  caps = [t for g in groups.values() for _, t in g]
  offsets = np.concatenate([[0], np.cumsum([len(g) for g in groups.values()])]).astype(np.int64)
  return CaptionSet(path, tuple(groups), tuple(cids), tuple(caps), offsets)


def detect_format(path: str) -> str:
  """``'karpathy'`` for a ``.json`` file, ``'flickr8k'`` when the first line is
  ``ID#N<TAB>caption``, else ``'precomp'``."""
  if path.endswith(".json"):
    return "karpathy"
  lines = _read_lines(path)
  return "flickr8k" if lines and _FLICKR_LINE.match(lines[0]) else "precomp"


def read_karpathy_captions(
  path: str, splits: Sequence[str] = ("train", "restval"), captions_per_image: int = 5
) -> CaptionSet:
  """The captions of ``splits`` in Karpathy's split file ``path``
  (:func:`jitr.relevance.karpathy_json.karpathy_captions`: the first ``captions_per_image``
  of each image), numbered as a precomp caption file of those lines."""
  try:
    texts = karpathy_json.karpathy_captions(path, splits, captions_per_image)
  except karpathy_json.CaptionFileError as err:
    raise CaptionFileError(str(err)) from None
  return precomp_caption_set(texts, captions_per_image, path)


def read_captions(
  path: str,
  fmt: str = "auto",
  captions_per_image: int = 5,
  splits: Sequence[str] = ("train", "restval"),
) -> CaptionSet:
  """Read a caption file in ``fmt`` (``auto``, ``precomp``, ``flickr8k`` or ``karpathy``:
  the images of ``splits`` in a Karpathy split file, :func:`!read_karpathy_captions`)."""
  if fmt == "auto":
    fmt = detect_format(path)
  if fmt == "precomp":
    return read_precomp_captions(path, captions_per_image)
  if fmt == "flickr8k":
    return read_flickr8k_tokens(path)
  if fmt == "karpathy":
    return read_karpathy_captions(path, splits, captions_per_image)
  raise CaptionFileError(
    f"{path}: unknown caption format {fmt!r} (expected {', '.join(CAPTION_FORMATS[:-1])} or "
    f"{CAPTION_FORMATS[-1]})"
  )
