"""One array of a labelled vector dataset, read from a ``.npy`` or a MATLAB ``.mat`` file.

:func:`read_array` reads a ``.npy`` file with numpy (``allow_pickle=False``: nothing but
an array) or one named variable of a ``.mat`` file with ``scipy.io.loadmat`` (MATLAB 5
to 7.2 files; a sparse matrix becomes a dense array; nothing in the file is executed).
:func:`vectors` and :func:`labels` check what was read: vectors ``[n, D]``, finite;
labels as class ids ``[n]`` (or a MATLAB column ``[n, 1]``) of whole numbers, or
memberships ``[n, C]`` of 0 and 1. Every bad file is one :class:`LabelledDataError`
line naming the file and what was expected.
"""

from __future__ import annotations

import os

import numpy as np

from jitr import paths

SUFFIXES = (".npy", ".mat")


class LabelledDataError(ValueError):
  """A file of a labelled vector dataset that cannot be used (one line naming it)."""


def read_array(path: str, variable: str, what: str, variable_field: str) -> np.ndarray:
  """The array of ``path``: the ``.npy`` file's, or the ``.mat`` file's ``variable`` (the
  config field ``variable_field`` names it). ``what``: what the file should hold, for
  the error line."""
  if not paths.isfile(path):
    raise LabelledDataError(f"{path}: no such file; expected {what} (.npy or .mat)")
  suffix = os.path.splitext(path)[1].lower()
  if suffix not in SUFFIXES:
    raise LabelledDataError(f"{path}: expected a .npy or .mat file of {what}")
  if suffix == ".npy":
    try:
      with paths.open(path, "rb") as f:
        return np.load(f, allow_pickle=False)
    except (ValueError, OSError, EOFError) as err:
      raise LabelledDataError(f"{path}: not a readable .npy array of {what} ({err})") from None
  if not variable:
    raise LabelledDataError(
      f"{path}: a .mat file holds named variables; give the one of {what} as {variable_field}"
    )
  return _read_mat(path, variable, what)


def _read_mat(path: str, variable: str, what: str) -> np.ndarray:
  import scipy.io  # the train extra; only .mat files need it
  import scipy.sparse

  try:
    with paths.open(path, "rb") as f:
      held = scipy.io.loadmat(f, variable_names=[variable])
    value = held.get(variable)
    if value is None:
      with paths.open(path, "rb") as f:
        names = sorted(name for name, _, _ in scipy.io.whosmat(f))
  except NotImplementedError:  # scipy's answer to an HDF5-based MATLAB 7.3 file
    raise LabelledDataError(
      f"{path}: a MATLAB 7.3 (HDF5) file; save it with -v7 or as .npy ({what})"
    ) from None
  except (ValueError, TypeError, OSError, EOFError, scipy.io.matlab.MatReadError) as err:
    raise LabelledDataError(f"{path}: not a readable .mat file of {what} ({err})") from None
  if value is None:
    _read_whole_mat(path, variable, what)  # a file cut short reads as one without the rest
    raise LabelledDataError(
      f"{path}: no variable {variable!r}; expected {what} (it holds: {', '.join(names)})"
    )
  return value.toarray() if scipy.sparse.issparse(value) else np.asarray(value)


def _read_whole_mat(path: str, variable: str, what: str) -> None:
  """Reads every variable of ``path``, refusing a file that does not read whole: scipy
  skips the variables it was not asked for by their recorded sizes and stops quietly at
  the end of the file, so a file cut short looks like one without ``variable``."""
  import scipy.io

  try:
    with paths.open(path, "rb") as f:
      scipy.io.loadmat(f)
  except (ValueError, TypeError, OSError, EOFError, scipy.io.matlab.MatReadError) as err:
    raise LabelledDataError(
      f"{path}: cut short or damaged ({err}), so {variable!r} cannot be read; expected {what}"
    ) from None


def _numeric(array: np.ndarray, path: str, what: str) -> None:
  if array.dtype != bool and not np.issubdtype(array.dtype, np.number):
    raise LabelledDataError(f"{path}: holds {array.dtype} values; expected {what} (numbers)")
  if np.issubdtype(array.dtype, np.complexfloating):
    raise LabelledDataError(f"{path}: holds complex values; expected {what} (real numbers)")


def vectors(array: np.ndarray, path: str, what: str) -> np.ndarray:
  """``array`` as float32 ``[n, D]``; refuses another rank, no rows or columns, values that
  are not numbers and NaN / infinite values (their count and first row)."""
  _numeric(array, path, what)
  if array.ndim != 2 or 0 in array.shape:
    raise LabelledDataError(f"{path}: shape {array.shape}; expected {what} [n, D], one row each")
  out = np.asarray(array, np.float32)
  bad = ~np.isfinite(out)
  if bad.any():
    row = int(np.flatnonzero(bad.any(axis=1))[0])
    raise LabelledDataError(
      f"{path}: {int(bad.sum())} NaN or infinite values (the first in row {row}); "
      f"expected finite {what}"
    )
  return out


def labels(array: np.ndarray, path: str, first_class: int) -> np.ndarray:
  """Class ids int64 ``[n]`` (``first_class`` subtracted: a MATLAB 1-based id 1 becomes
  0) from ``[n]`` or ``[n, 1]``, or bool memberships ``[n, C]`` (C >= 2) of 0 / 1 values."""
  what = "class labels: ids [n] or memberships [n, C] of 0 and 1"
  _numeric(array, path, what)
  if array.ndim == 2 and array.shape[1] == 1:
    array = array[:, 0]
  if array.ndim not in (1, 2) or array.shape[0] == 0:
    raise LabelledDataError(f"{path}: shape {array.shape}; expected {what}")
  values = np.asarray(array, np.float64)
  if not np.all(np.isfinite(values)):
    raise LabelledDataError(f"{path}: NaN or infinite labels; expected {what}")
  if array.ndim == 2:
    if not np.all((values == 0) | (values == 1)):
      odd = values[(values != 0) & (values != 1)][0]
      raise LabelledDataError(f"{path}: a membership {odd:g} that is not 0 or 1; expected {what}")
    return values == 1
  if not np.all(values == np.round(values)):
    odd = values[values != np.round(values)][0]
    raise LabelledDataError(
      f"{path}: a class id {odd:g} that is not a whole number; expected {what}"
    )
  ids = values.astype(np.int64) - first_class
  if ids.min() < 0:
    raise LabelledDataError(
      f"{path}: class id {int(ids.min()) + first_class} below the first class {first_class} "
      "(config.labelled.first_class)"
    )
  return ids
