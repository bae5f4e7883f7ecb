"""Reader for the ``*_precomp`` folders of VSE++ / SCAN / VSE∞ (numpy only).

Layout (``{root}/f30k_precomp``, ``{root}/coco_precomp``, ``{root}/iaprtc12_precomp``,
any ``{root}/NAME_precomp``), with ``K`` captions per image (5; IAPR TC-12: 1)::

    {split}_ims.npy    float [N, 36, 2048] BUTD region features (memory-mapped)
    {split}_caps.txt   K·N lines, captions of image i on lines K·i .. K·i + K - 1

Splits (:func:`jitr.data.datasets.dataset_info`): ``train`` / ``dev`` / ``test``; coco
also ``testall`` (5K; its ``test`` is 1K). Some releases store one feature row per
caption (``K·N`` rows, each image repeated K times: the official loaders' ``im_div = 1``,
caption ``j`` -> row ``j``; one row per image is their ``im_div = 5``); the reader
accepts that and keeps every K-th row (a strided memmap view, nothing copied).

Every problem raises one error naming the file and what was expected.
"""

from __future__ import annotations

import dataclasses
import mmap
import os
from typing import Any

import numpy as np

from jitr import fileio, paths
from jitr.data import vocab as vocab_lib
from jitr.data.datasets import DATASETS, PRECOMP_SUFFIX

NUM_REGIONS = 36
FEATURE_DIM = 2048
CAPTIONS_PER_IMAGE = 5


class PrecompError(ValueError):
  """A ``*_precomp`` folder is malformed (message names the file and expectation)."""


@dataclasses.dataclass(frozen=True)
class PrecompSplit:
  """One split: image features ``[N, R, D]`` (memmap) and ``5·N`` captions."""

  images: np.ndarray
  captions: tuple[str, ...]
  captions_per_image: int = CAPTIONS_PER_IMAGE

  @property
  def num_images(self) -> int:
    return int(self.images.shape[0])

  def caption_image_index(self) -> np.ndarray:
    """``[5·N]`` int: the image of each caption (``j // 5``)."""
    return np.arange(len(self.captions)) // self.captions_per_image

  def region_mask(self) -> np.ndarray:
    """``[N, R]`` bool, all True: precomp features have no padding."""
    return np.ones(self.images.shape[:2], bool)


def precomp_dir(root: str | os.PathLike, dataset: str) -> str:
  """``{root}/{dataset}_precomp`` (``dataset``: ``f30k``, ``coco``, ``iaprtc12``, any folder
  name without a path separator)."""
  if not dataset or "/" in dataset or os.sep in dataset or dataset in (".", ".."):
    raise PrecompError(f"precomp dataset {dataset!r}: expected a folder name, e.g. 'f30k'")
  return os.path.join(os.fspath(root), f"{dataset}{PRECOMP_SUFFIX}")


def known_splits(dataset: str) -> tuple[str, ...] | None:
  """The splits of the registered precomp dataset ``dataset`` (``f30k``, ``coco``,
  ``iaprtc12``), or ``None`` for another name."""
  info = DATASETS.get(f"{dataset}{PRECOMP_SUFFIX}")
  return info.splits if info is not None else None


def read_captions(path: str) -> tuple[str, ...]:
  """Captions of a ``{split}_caps.txt``: one per line, stripped; trailing blank
  lines ignored; a blank line inside the file is an error."""
  if not paths.isfile(path):
    raise FileNotFoundError(
      f"precomp: missing caption file {path!r} (expected one caption per line)"
    )
  try:
    lines = [line.strip() for line in fileio.read_utf8_lines(path)]
  except UnicodeError as err:
    raise PrecompError(str(err)) from None
  while lines and not lines[-1]:
    lines.pop()
  for i, line in enumerate(lines):
    if not line:
      raise PrecompError(f"{path}: line {i + 1} is empty; expected a caption")
  return tuple(lines)


def npz_refusal(path: str, archive: Any, expected: str) -> str:
  """The one line refusing ``path``, a ``.npz`` archive (``np.savez``'s output, read by
  ``np.load`` as ``archive``, which is closed here) given where a ``.npy`` array was
  expected: the arrays it holds and how to save the features instead."""
  names = sorted(archive.files)
  archive.close()
  held = ", ".join(map(repr, names[:5])) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
  return (
    f"{path}: a .npz archive (np.savez output, holding {held or 'no arrays'}), not a .npy "
    f"array; expected float {expected} features saved with np.save"
  )


def read_features(
  path: str,
  *,
  num_regions: int | None = NUM_REGIONS,
  feature_dim: int | None = FEATURE_DIM,
  mmap: bool = True,
) -> np.ndarray:
  """``{split}_ims.npy`` as a (memory-mapped) float array ``[N, R, D]``; checks
  rank 3, floating dtype and ``R``/``D`` where given (``None`` skips a check)."""
  if not paths.isfile(path):
    raise FileNotFoundError(
      f"precomp: missing feature file {path!r} "
      f"(expected float [N, {num_regions}, {feature_dim}] .npy)"
    )
  try:
    if mmap and not paths.is_url(path):
      feats = np.load(path, mmap_mode="r", allow_pickle=False)
    else:  # a bucket's object cannot be memory-mapped: read whole
      with paths.open(path, "rb") as f:
        feats = np.load(f, allow_pickle=False)
  except (ValueError, OSError) as e:
    raise PrecompError(f"{path}: not a readable .npy array ({e})") from None
  expected = f"[N, {num_regions or 'R'}, {feature_dim or 'D'}]"
  if not isinstance(feats, np.ndarray):  # np.load read a .npz archive (np.savez's output)
    raise PrecompError(npz_refusal(path, feats, expected))
  if feats.ndim != 3:
    raise PrecompError(f"{path}: features have shape {feats.shape}; expected {expected}")
  if not np.issubdtype(feats.dtype, np.floating):
    raise PrecompError(f"{path}: features have dtype {feats.dtype}; expected a float dtype")
  if num_regions is not None and feats.shape[1] != num_regions:
    raise PrecompError(
      f"{path}: features have shape {feats.shape}; expected "
      f"{expected} ({num_regions} regions per image)"
    )
  if feature_dim is not None and feats.shape[2] != feature_dim:
    raise PrecompError(
      f"{path}: features have shape {feats.shape}; expected {expected} (feature dim {feature_dim})"
    )
  check_finite_features(feats, path)
  return feats


def _blocks(feats: np.ndarray, rows_per_block: int):
  """``(first row, block)`` of ``feats`` in blocks of ``rows_per_block`` rows. A C-ordered
  memmap (as ``np.load`` maps a file, not a view of one) is read from its file into one
  reused buffer (``readinto``), so checking it leaves
  none of the mapping resident: reading through the mapping would keep every page of the
  file in the process's memory (and its peak RSS) until the kernel reclaims it."""
  whole_file = isinstance(feats, np.memmap) and isinstance(feats.base, mmap.mmap)  # not a view
  if not (whole_file and feats.flags.c_contiguous and feats.filename):
    for lo in range(0, feats.shape[0], rows_per_block):
      yield lo, np.asarray(feats[lo : lo + rows_per_block])
    return
  row_bytes = feats.itemsize * int(np.prod(feats.shape[1:]))
  buffer = np.empty((min(rows_per_block, feats.shape[0]), *feats.shape[1:]), feats.dtype)
  with paths.open(feats.filename, "rb") as f:
    f.seek(feats.offset)
    for lo in range(0, feats.shape[0], rows_per_block):
      block = buffer[: min(rows_per_block, feats.shape[0] - lo)]
      if f.readinto(memoryview(block).cast("B")) != block.shape[0] * row_bytes:
        raise PrecompError(f"{feats.filename}: the file ends inside row {lo}")
      yield lo, block


def check_finite_features(feats: np.ndarray, path: str, *, rows_per_block: int = 256) -> None:
  """Raises :class:`PrecompError` naming the first ``[row, region, dim]`` of ``feats`` that
  is NaN or ±Inf (read in blocks of ``rows_per_block`` rows, so a memmap is never loaded
  whole, nor left resident)."""
  for lo, block in _blocks(feats, rows_per_block):
    bad = ~np.isfinite(block)
    if bad.any():
      row, region, dim = np.argwhere(bad)[0]
      raise PrecompError(
        f"{path}: feature [{lo + row}, {region}, {dim}] is {block[row, region, dim]} "
        f"(image {lo + row}); expected finite values ({int(bad.sum())} non-finite in rows "
        f"{lo}..{lo + block.shape[0] - 1})"
      )


def load_precomp_split(
  folder: str | os.PathLike,
  split: str,
  *,
  dataset: str | None = None,
  num_regions: int | None = NUM_REGIONS,
  feature_dim: int | None = FEATURE_DIM,
  captions_per_image: int = CAPTIONS_PER_IMAGE,
  mmap: bool = True,
) -> PrecompSplit:
  """Reads ``{folder}/{split}_ims.npy`` and ``{folder}/{split}_caps.txt``.

  ``dataset`` (``'f30k'``/``'coco'``/``'iaprtc12'``; inferred from a folder named
  ``{dataset}_precomp``) restricts ``split`` to that registered dataset's splits. The
  caption count must be ``captions_per_image ·`` the number of feature rows, or
  equal to it (one row per caption, then every ``captions_per_image``-th row is
  kept).
  """
  folder = os.fspath(folder)
  if not paths.isdir(folder):
    raise FileNotFoundError(f"precomp: no folder {folder!r}")
  if dataset is None:
    base = os.path.basename(os.path.normpath(folder))
    dataset = base.removesuffix(PRECOMP_SUFFIX) if base.endswith(PRECOMP_SUFFIX) else None
  splits = known_splits(dataset) if dataset is not None else None
  if splits is not None and split not in splits:
    raise PrecompError(
      f"{folder}: split {split!r} is not a {dataset} split; expected one of {splits}"
    )
  ims_path = os.path.join(folder, f"{split}_ims.npy")
  caps_path = os.path.join(folder, f"{split}_caps.txt")
  for path in (ims_path, caps_path):
    if not paths.isfile(path):
      present = sorted(paths.listdir(folder))[:12]
      raise FileNotFoundError(
        f"precomp: missing {path!r}; a {split!r} split needs {split}_ims.npy and "
        f"{split}_caps.txt (folder has: {present})"
      )
  feats = read_features(ims_path, num_regions=num_regions, feature_dim=feature_dim, mmap=mmap)
  captions = read_captions(caps_path)
  n_rows, n_caps = feats.shape[0], len(captions)
  if n_caps == captions_per_image * n_rows:
    images = feats
  elif n_caps == n_rows and n_rows % captions_per_image == 0:
    images = feats[::captions_per_image]
  else:
    raise PrecompError(
      f"{caps_path} has {n_caps} captions but {ims_path} has {n_rows} images; "
      f"expected {captions_per_image} captions per image "
      f"({captions_per_image * n_rows} captions)"
    )
  return PrecompSplit(images=images, captions=captions, captions_per_image=captions_per_image)


def build_precomp_vocab(
  folder: str | os.PathLike,
  *,
  min_count: int = 1,
  split: str = "train",
  tokenizer: str = vocab_lib.JITR,
) -> vocab_lib.Vocab:
  """Vocabulary from ``{folder}/{split}_caps.txt`` (the training captions) by the
  tokenizer named ``tokenizer`` (:data:`!jitr.data.vocab.TOKENIZERS`)."""
  return vocab_lib.build_vocab(
    read_captions(os.path.join(os.fspath(folder), f"{split}_caps.txt")),
    min_count=min_count,
    tokenizer=tokenizer,
  )
