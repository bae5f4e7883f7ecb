"""What a ``*_precomp`` folder holds, split by split, checked before training on it.

:func:`check_precomp_folder` reads every split of a dataset (its registry entry's
``splits``) the way training reads it -- features memory-mapped and checked in blocks of
rows, captions counted -- and returns one :class:`SplitCheck` per split; the first
unusable file raises :class:`~jitr.data.precomp.PrecompError` naming it and what was
expected.
:func:`format_check_table` writes the rows as one Markdown table and
:func:`official_loader_notes` the official loaders' behaviours that apply to them.

The official precomp loaders (VSE++, SCAN, SGRAF, VSRN, VSE∞ ``PrecompDataset``) read
``{split}_ims.npy`` whole, take ``im_div = 5`` (caption ``j`` -> row ``j // 5``) when the
feature rows and the captions differ in number and ``im_div = 1`` (caption ``j`` -> row
``j``) when they are equal, and set the ``dev`` split's length to 5,000 captions (the
notes say so for Flickr30K and COCO, whose loaders these are).

Any precomp folder can be checked: its splits and captions per image come from
:func:`jitr.data.datasets.dataset_info` (IAPR TC-12: one caption per image) or, for a
folder of another name, from the ``captions_per_image`` the caller gives.
"""

from __future__ import annotations

import dataclasses
import os

from jitr import paths
from jitr.data import precomp
from jitr.data.datasets import PRECOMP_SUFFIX, dataset_info

# Captions the official loaders read of the dev split (``if data_split == 'dev':
# self.length = 5000``).
OFFICIAL_DEV_CAPTIONS = 5000

# Images of each standard split; None where neither the official code nor its READMEs
# state the number (the table says "unknown"): the official loaders (SCAN, VSE++, SGRAF,
# VSRN ``data.py``) take whatever ``{split}_ims.npy`` holds, and the READMEs name no F30K
# count, nor a COCO train or dev one. COCO testall: the official 5-fold evaluation
# (``evalrank(..., fold5=True)``) scores it as 5 folds of 1,000 images.
STANDARD_IMAGES: dict[str, dict[str, int | None]] = {
  "f30k": {"train": None, "dev": None, "test": None},
  "coco": {
    "train": None,
    "dev": None,
    # BruceW91/CVSE README.md (on SCAN's data.zip): ``--split test`` is the "MSCOCO 1K
    # test set", ``--split testall`` the "MSCOCO 5K test set"; KunpengLi1994/VSRN and
    # Paranioar/SGRAF README.md: ``fold5=False`` evaluates the MSCOCO 5K test set.
    "test": 1000,
    "testall": 5000,
  },
}
_DATASET_LABELS = {"f30k": "F30K", "coco": "COCO", "iaprtc12": "IAPR TC-12"}


@dataclasses.dataclass(frozen=True)
class SplitCheck:
  """One usable split of a ``*_precomp`` folder, as ``check_split`` found it."""

  dataset: str
  split: str
  images: int
  feature_rows: int
  rows_per_image: int
  num_regions: int
  feature_dim: int
  dtype: str
  captions: int
  standard_images: int | None
  non_finite: int = 0  # a NaN/Inf stops the check: a usable split has none

  @property
  def captions_per_image(self) -> int:
    """Captions per image (the caption count over the image count)."""
    return self.captions // self.images

  @property
  def matches_standard(self) -> bool | None:
    """Whether the image count is the standard one (None when that is unknown)."""
    return None if self.standard_images is None else self.images == self.standard_images


def dataset_name(dataset: str) -> str:
  """``'f30k'`` of ``'f30k_precomp'`` (or of ``'f30k'`` itself), and so for any folder
  name; an empty name is a :class:`~jitr.data.precomp.PrecompError`."""
  short = dataset.removesuffix(PRECOMP_SUFFIX)
  if not short:
    raise precomp.PrecompError(f"dataset {dataset!r}: expected a precomp folder name")
  return short


def split_layout(dataset: str, captions_per_image: int = 0) -> tuple[tuple[str, ...], int]:
  """``(splits, captions per image)`` of the precomp dataset ``dataset`` (short name):
  the registry's, ``captions_per_image`` when given; a folder of another name needs it."""
  info = dataset_info(f"{dataset}{PRECOMP_SUFFIX}")
  per_image = captions_per_image or info.captions_per_image
  if per_image < 1:
    raise precomp.PrecompError(
      f"{dataset}{PRECOMP_SUFFIX}: not a dataset jitr knows; give its captions per image "
      "(5 for Flickr30K / COCO-style folders, 1 for IAPR TC-12-style)"
    )
  return info.splits, per_image


def rows_per_image(
  num_rows: int, num_captions: int, ims_path: str, caps_path: str, *, per_image: int = 5
) -> int:
  """Feature rows per image: 1 when there are ``per_image`` captions per row, ``per_image``
  when there is one row per caption (a multiple of ``per_image`` rows); any other caption
  count is a :class:`~jitr.data.precomp.PrecompError` naming ``caps_path``."""
  if num_rows > 0 and num_captions == per_image * num_rows:
    return 1
  if num_rows > 0 and num_captions == num_rows and num_rows % per_image == 0:
    return per_image
  raise precomp.PrecompError(
    f"{caps_path}: {num_captions} captions for the {num_rows} feature rows of {ims_path}; "
    f"expected {per_image} captions per image ({per_image * num_rows} captions), or one per "
    f"row when the features store one row per caption"
  )


def check_split(
  folder: str | os.PathLike, split: str, *, dataset: str, per_image: int = 5
) -> SplitCheck:
  """The :class:`SplitCheck` of ``{folder}/{split}_ims.npy`` and ``{split}_caps.txt``:
  features float ``[rows, 36, 2048]``, opened memory-mapped and checked for NaN/Inf in
  blocks of rows (:func:`~jitr.data.precomp.read_features`); ``per_image`` captions per
  image."""
  folder = os.fspath(folder)
  ims_path = os.path.join(folder, f"{split}_ims.npy")
  caps_path = os.path.join(folder, f"{split}_caps.txt")
  needs = {
    ims_path: f"float [N, {precomp.NUM_REGIONS}, {precomp.FEATURE_DIM}] region features",
    caps_path: f"{per_image} caption{'s' if per_image > 1 else ''} per image, one per line",
  }
  for path, what in needs.items():
    if not paths.isfile(path):
      raise precomp.PrecompError(f"{path}: no such file; expected the {split!r} split's {what}")
  feats = precomp.read_features(ims_path, mmap=True)
  return _split_check(feats, split, dataset, (ims_path, caps_path), per_image)


def _split_check(
  feats, split: str, dataset: str, files: tuple[str, str], per_image: int
) -> SplitCheck:
  """The :class:`SplitCheck` of checked features ``feats`` and the captions of ``files``'
  caption file."""
  ims_path, caps_path = files
  num_rows, _, _ = feats.shape
  if num_rows == 0:
    raise precomp.PrecompError(
      f"{ims_path}: features have shape {feats.shape}; expected at least one image"
    )
  captions = precomp.read_captions(caps_path)
  per_row = rows_per_image(num_rows, len(captions), ims_path, caps_path, per_image=per_image)
  return SplitCheck(
    dataset=dataset,
    split=split,
    images=num_rows // per_row,
    feature_rows=num_rows,
    rows_per_image=per_row,
    num_regions=int(feats.shape[1]),
    feature_dim=int(feats.shape[2]),
    dtype=str(feats.dtype),
    captions=len(captions),
    standard_images=STANDARD_IMAGES.get(dataset, {}).get(split),
  )


def check_precomp_folder(
  root: str | os.PathLike, dataset: str, *, captions_per_image: int = 0
) -> list[SplitCheck]:
  """One :class:`SplitCheck` per split of ``{root}/{dataset}`` (``dataset``
  ``'f30k_precomp'``, ``'coco_precomp'``, ``'iaprtc12_precomp'`` or any ``NAME_precomp``
  with its ``captions_per_image``), in the dataset's split order; the first unusable file
  raises :class:`~jitr.data.precomp.PrecompError`."""
  short = dataset_name(dataset)
  splits, per_image = split_layout(short, captions_per_image)
  folder = precomp.precomp_dir(root, short)
  if not paths.isdir(folder):
    raise precomp.PrecompError(
      f"{folder}: no such folder; expected the {short}_precomp folder with "
      f"{{split}}_ims.npy and {{split}}_caps.txt for {', '.join(splits)}"
    )
  return [check_split(folder, s, dataset=short, per_image=per_image) for s in splits]


_COLUMNS = (
  "split",
  "images",
  "feature rows",
  "rows per image",
  "regions × dims",
  "dtype",
  "captions",
  "captions per image",
  "standard images",
  "matches",
  "non-finite",
)


def _table_row(check: SplitCheck) -> tuple[str, ...]:
  """The cells of one split's row of :func:`format_check_table`."""
  label = _DATASET_LABELS.get(check.dataset, check.dataset)
  standard = "unknown" if check.standard_images is None else f"{check.standard_images:,} ({label})"
  matches = {None: "unknown", True: "yes", False: "no"}[check.matches_standard]
  return (
    check.split,
    f"{check.images:,}",
    f"{check.feature_rows:,}",
    str(check.rows_per_image),
    f"{check.num_regions} × {check.feature_dim}",
    check.dtype,
    f"{check.captions:,}",
    str(check.captions_per_image),
    standard,
    matches,
    f"{check.non_finite:,}",
  )


def format_check_table(checks: list[SplitCheck]) -> str:
  """One Markdown table of ``checks``, a row per split: its counts, the standard image
  count of the split ("unknown" where no official source states it) and whether the
  found count matches it (a subset is no error: "no")."""
  lines = ["| " + " | ".join(_COLUMNS) + " |", "|" + "---|" * len(_COLUMNS)]
  lines += ["| " + " | ".join(_table_row(check)) + " |" for check in checks]
  return "\n".join(lines)


def official_loader_notes(checks: list[SplitCheck]) -> list[str]:
  """What the official precomp loaders do differently with these splits: the dev split
  cut to its first 5,000 captions (or, with fewer captions, read past its end), and
  features stored one row per caption (``im_div = 1``: caption ``j`` -> row ``j``)."""
  notes = []
  for check in checks:
    if check.split == "dev" and check.dataset not in STANDARD_IMAGES:
      pass  # the dev cut is that of the Flickr30K / COCO loaders
    elif check.split == "dev" and check.captions > OFFICIAL_DEV_CAPTIONS:
      kept = OFFICIAL_DEV_CAPTIONS // check.captions_per_image
      notes.append(
        f"dev: the official loaders validate on its first {OFFICIAL_DEV_CAPTIONS:,} captions "
        f"only (`self.length = 5000`): the first {kept:,} of its {check.images:,} images"
      )
    elif check.split == "dev" and check.captions < OFFICIAL_DEV_CAPTIONS:
      notes.append(
        f"dev: {check.captions:,} captions; the official loaders set the dev length to "
        f"{OFFICIAL_DEV_CAPTIONS:,} captions and would read past its end"
      )
    if check.rows_per_image > 1:
      notes.append(
        f"{check.split}: one feature row per caption; the official loaders read row j for "
        f"caption j (`im_div = 1`), jitr keeps every {check.rows_per_image}th row"
      )
  return notes


def format_check_report(checks: list[SplitCheck]) -> str:
  """``format_check_table`` of ``checks``, then ``official_loader_notes`` as a list
  (when any applies)."""
  notes = official_loader_notes(checks)
  if not notes:
    return format_check_table(checks)
  heading = "The official loaders (VSE++, SCAN, SGRAF, VSRN, VSE∞):"
  listed = "\n".join([heading] + [f"- {note}" for note in notes])
  return f"{format_check_table(checks)}\n\n{listed}"
