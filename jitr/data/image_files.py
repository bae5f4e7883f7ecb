"""A split's images as files, decoded when a batch asks for them: :class:`ImageFiles`.

An :class:`ImageFiles` stands where a split of region features holds an array
(:attr:`jitr.data.pairs.RetrievalSplit.images`): ``len``, ``shape`` ``(N, S, S, 3)``,
``dtype`` float32, and indexing by an int, a slice or an int array gives the images'
evaluation inputs (:func:`jitr.data.image_transforms.eval_image`, open_clip's evaluation
transform). :meth:`ImageFiles.take` gives training inputs instead: one random crop per row
(:func:`jitr.data.image_transforms.train_image`) from ``numpy.random.default_rng(seed)`` of
the row's seed, so a batch is the same whichever thread or host decodes it.

Files are read with PIL (``Image.open``, its JPEG decoder: what open_clip's loaders read)
by a pool of threads (PIL releases the GIL while it decodes and resizes), one image per
task, in the order of the rows. A file that cannot be read is one line naming it.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import os
import threading
from collections.abc import Sequence

import numpy as np
from PIL import Image, UnidentifiedImageError

from jitr import paths
from jitr.data.image_transforms import eval_image, train_image

_POOL: concurrent.futures.ThreadPoolExecutor | None = None
_POOL_LOCK = threading.Lock()


def decode_pool() -> concurrent.futures.ThreadPoolExecutor:
  """The process's image-decoding threads (one per CPU core), made on first use."""
  global _POOL
  with _POOL_LOCK:
    if _POOL is None:
      _POOL = concurrent.futures.ThreadPoolExecutor(
        max_workers=os.cpu_count() or 1, thread_name_prefix="jitr-images"
      )
    return _POOL


def open_image(path: str) -> Image.Image:
  """The decoded image of ``path``; ``ValueError`` (one line naming it) when the file is
  missing, not an image or cut short."""
  try:
    with paths.open(path, "rb") as f:
      image = Image.open(f)
      image.load()
  except FileNotFoundError:
    raise ValueError(f"{path}: no such image file") from None
  except (UnidentifiedImageError, OSError, SyntaxError) as err:
    raise ValueError(f"{path}: not a readable image ({err})") from None
  return image


@dataclasses.dataclass(frozen=True)
class ImageFiles:
  """The images ``files`` (paths or URLs) as a tower's ``size × size`` inputs made as
  ``preprocessing`` (a :class:`~jitr.models.Preprocessing`) says (module docstring)."""

  files: tuple[str, ...]
  size: int
  preprocessing: object

  def __len__(self) -> int:
    return len(self.files)

  @property
  def shape(self) -> tuple[int, int, int, int]:
    return (len(self.files), self.size, self.size, 3)

  @property
  def ndim(self) -> int:
    return 4

  @property
  def dtype(self) -> np.dtype:
    return np.dtype(np.float32)

  def __getitem__(self, index) -> np.ndarray:
    """The evaluation inputs of the images ``index`` (an int: ``[S, S, 3]``; a slice or an
    int array: ``[B, S, S, 3]``)."""
    if isinstance(index, (int, np.integer)):
      return self.take(np.asarray([index]))[0]
    rows = np.arange(len(self))[index]
    return self.take(rows)

  def take(self, rows: Sequence[int], seeds: Sequence[int] | None = None) -> np.ndarray:
    """``[len(rows), S, S, 3]`` float32 inputs of the images ``rows``: evaluation inputs,
    or with ``seeds`` (one per row) training crops drawn from each row's seed."""
    return made_inputs(lambda i: open_image(self.files[i]), self, rows, seeds)


@dataclasses.dataclass(frozen=True, eq=False)
class ImageArrays(ImageFiles):
  """Rendered images held as ``uint8`` arrays ``[N, H, W, 3]`` (jitr_shapes' scenes), made
  into a tower's inputs per batch exactly as :class:`ImageFiles` makes files (each array a
  PIL image, then the same transforms); ``files`` is empty."""

  arrays: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros((0, 1, 1, 3), np.uint8))

  def __len__(self) -> int:
    return len(self.arrays)

  @property
  def shape(self) -> tuple[int, int, int, int]:
    return (len(self.arrays), self.size, self.size, 3)

  def take(self, rows: Sequence[int], seeds: Sequence[int] | None = None) -> np.ndarray:
    """As :meth:`ImageFiles.take`, from the arrays."""
    return made_inputs(lambda i: Image.fromarray(self.arrays[i]), self, rows, seeds)


def image_arrays(arrays: np.ndarray, size: int, preprocessing: object) -> ImageArrays:
  """The :class:`ImageArrays` of ``arrays`` ``[N, H, W, 3]`` ``uint8``."""
  return ImageArrays((), size, preprocessing, np.asarray(arrays, np.uint8))


def made_inputs(
  image_of, images: ImageFiles, rows: Sequence[int], seeds: Sequence[int] | None
) -> np.ndarray:
  """``[len(rows), S, S, 3]`` float32: ``image_of(row)`` (a PIL image) of each row made
  into ``images``' evaluation input, or with ``seeds`` its training crop, by the decoding
  threads (:func:`decode_pool`) in row order (a row's error re-raised)."""
  rows = np.asarray(rows, np.int64).reshape(-1)
  if seeds is not None and len(seeds) != len(rows):
    raise ValueError(f"ImageFiles.take: {len(seeds)} seeds for {len(rows)} rows")
  out = np.empty((len(rows), images.size, images.size, 3), np.float32)

  def fill(k: int) -> None:
    image = image_of(int(rows[k]))
    if seeds is None:
      out[k] = eval_image(image, images.size, images.preprocessing)
    else:
      rng = np.random.default_rng(int(seeds[k]))
      out[k] = train_image(image, images.size, images.preprocessing, rng)

  for done in decode_pool().map(fill, range(len(rows))):
    del done  # map re-raises a row's error here, in row order
  return out


def is_image_files(images: object) -> bool:
  """Whether a split's ``images`` are made into tower inputs per batch (:class:`ImageFiles`,
  :class:`ImageArrays`)."""
  return isinstance(images, ImageFiles)
