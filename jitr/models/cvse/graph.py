"""CVSE's concept-graph adjacency, computed as the official code computes it.

CVSE (Wang et al., ECCV 2020; BruceW91/CVSE @ d4a0b4e) runs a 2-layer GCN over ``C``
concepts. Its adjacency is built once from co-occurrence statistics (the file
``f30k_adj_concepts.pkl``: ``nums [C]`` and ``adj_O_P``, ``adj_O_M``, ``adj_all [C, C]``)
by ``util/util_C_GCN.py:gen_A_concept`` and normalised on every forward pass by
``gen_adj``. With ``N`` a co-occurrence matrix, ``n`` the counts, ``t`` the threshold and
``I`` the identity, the official steps are, in this order:

1. ``P = N / n[:, None]``: row ``i`` divided by ``n_i`` (``P_ij`` estimates
   ``p(j | i)``); int32 / int32 true division, so float64 (:func:`!conditional_probabilities`).
2. by mode (``model_CVSE.py`` builds ``C_GCN(num_attribute, t=0.3,
   adj_gen_mode='Complex')``):

   - ``Complex`` (eq. 2 then eq. 3 of the paper): ``R = 5 ** (P - 0.02) - 5 ** -0.02``
     (:func:`!rescaled_adjacency`), then ``R[R < t] = 0``, then ``R[R >= t] = 1``, then
     ``R * 0.25 / (R.sum(0) + 1e-6)`` (column sums; :func:`!thresholded_adjacency`);
   - ``ML_GCN`` (eq. 3 only): the thresholding and ``0.25`` scaling on ``P`` itself;
   - ``My_rescale`` (eq. 2 only): the rescaling alone.

3. ``adj_O_P`` and ``adj_O_M`` only: ``A / (A.sum(0) + 1e-8)`` (each column divided by its
   sum again); ``adj_all`` skips this step, so its columns keep the sums ``0.25 s / (s +
   1e-6)`` of step 2 (``s`` the number of ones in the column).
4. ``A + I`` (``np.identity(num_classes, np.int)``) (:func:`!concept_adjacency`).

``C_GCN.__init__`` stores the three results as ``torch.nn.Parameter`` s of ``float32``
(:func:`!official_adjacencies` gives them, in float64), and ``C_GCN.forward`` takes
``gen_adj(A).detach()`` of each (:func:`!normalized_adjacency`):

``d = A.sum(1) ** -0.5`` (row sums), ``D = diag(d)``, ``(A D)^T D = D A^T D``, i.e.
``out_ij = A_ji / sqrt(r_i r_j)`` with ``r`` the row sums of ``A``.

``model_CVSE.py`` calls ``C_GCN`` with ``conv_mode='whole_graph'`` only, so the GCN uses
the normalised ``adj_all`` alone (``dual_graph`` would average ``adj_O_P`` and
``adj_O_M``): each layer is ``adj @ (x @ W)``.

Quirks of the official code, kept here unless said otherwise:

- The thresholding is two in-place assignments, ``< t`` to 0 then ``>= t`` to 1, so an
  entry exactly at ``t`` becomes 1; with ``t <= 0`` the zeros written by the first
  assignment are then set to 1 too, so every entry becomes 1 (``C_GCN``'s default
  ``t=0`` would give an all-ones graph; ``model_CVSE.py`` passes ``t=0.3``).
- ``adj_all``, the one matrix the model uses, is not column-normalised a second time,
  unlike ``adj_O_P`` and ``adj_O_M``; its columns sum to about ``0.25``, plus ``1`` on the
  diagonal from the identity.
- In the ``ML_GCN`` mode, ``adj_O_M``'s ``0.25`` scaling is assigned to ``_adj_OPC`` (a
  typo) and so lost: ``adj_O_M`` goes on as the 0/1 matrix, then is column-normalised.
  (``_A_adj['adj_O_P']`` is already stored, so the typo does not change ``adj_O_P``.)
- Dividing by ``nums`` makes the matrices asymmetric even where the co-occurrence counts
  are symmetric (``adj_O_M`` and ``adj_all`` are), and so do the column scalings unless
  every column keeps as many edges; ``gen_adj`` maps a symmetric matrix to a symmetric one.
- ``np.int`` was removed in numpy 1.24 (``AttributeError`` there); on older numpy the int
  identity added to the float64 matrix changes no value. ``num_classes`` (``--num_attribute``)
  must equal ``C``; here ``C`` is read off the matrix.
- A mode name other than the three (such as ``C_GCN``'s default ``adj_gen_mode='C_GCN'``)
  silently skips step 2 in the official code; here it raises ``ValueError``.
- A zero count divides by zero in numpy (a warning, not an error): each zero of that row
  gives ``0 / 0 = nan``, which neither ``< t`` nor ``>= t`` replaces, so the nan reaches
  its column's sum and the whole column becomes nan; a true count of 0 has an all-zero
  row, so the whole matrix becomes nan (a non-zero entry gives ``inf``, thresholded to 1).
  A non-positive row sum in ``gen_adj`` gives ``inf`` or ``nan`` in the same way. Here both
  raise ``ValueError`` (the real F30K counts are all positive, 310 to 41778).
- The official matrices are float64 until step 4 and float32 after it
  (``torch.from_numpy(...).float()``), and ``gen_adj`` runs in float32; the functions here
  compute in float64 (they agree with the float32 ones to about 1e-6, relative).
- The three matrices are ``Parameter`` s with ``requires_grad`` and are handed to Adam
  (``C_GCN.parameters()``), but ``forward`` uses only ``gen_adj(...).detach()``, so they
  get no gradient and never change; they are saved in the ``C_GCN`` state dict of a
  checkpoint (float32) and loaded back from it.

Every bad input raises one ``ValueError`` line that names the function and what was
expected. This module is numpy only.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

ADJACENCY_KEYS = ("adj_O_P", "adj_O_M", "adj_all")
MODES = ("Complex", "ML_GCN", "My_rescale")
THRESHOLD = 0.3  # model_CVSE.py: C_GCN(..., t=0.3, adj_gen_mode='Complex')


def _matrix(name: str, value: Any, what: str) -> np.ndarray:
  """``value`` as a finite, non-negative, square float64 matrix ``[C, C]`` with ``C >= 1``."""
  array = np.asarray(value)
  if array.ndim != 2 or array.shape[0] != array.shape[1] or array.shape[0] == 0:
    raise ValueError(f"{name}: {what} has shape {array.shape}; expected a square matrix [C, C]")
  if array.dtype.kind not in "biuf":
    raise ValueError(f"{name}: {what} has dtype {array.dtype}; expected real numbers")
  array = array.astype(np.float64)
  if not np.isfinite(array).all() or (array < 0).any():
    raise ValueError(f"{name}: {what} holds negative or non-finite values; expected finite "
                     "values >= 0")  # fmt: skip
  return array


def _counts(name: str, value: Any, c: int) -> np.ndarray:
  """``value`` as float64 counts ``[C]``, all positive and finite."""
  counts = np.asarray(value)
  if counts.shape != (c,) or counts.dtype.kind not in "biuf":
    raise ValueError(f"{name}: counts have shape {counts.shape} and dtype {counts.dtype}; "
                     f"expected {c} real counts [C] (C = {c} from the matrix)")  # fmt: skip
  counts = counts.astype(np.float64)
  if not (np.isfinite(counts) & (counts > 0)).all():
    raise ValueError(f"{name}: counts hold {np.sum(~(counts > 0))} zero, negative or "
                     "non-finite values; expected counts > 0 (the official code divides by "
                     "them; a zero count makes nan columns)")  # fmt: skip
  return counts


def _threshold(name: str, threshold: Any) -> float:
  if isinstance(threshold, bool) or not isinstance(threshold, (int, float, np.number)):
    raise ValueError(f"{name}: threshold is {threshold!r}; expected a real number")
  if not np.isfinite(threshold):
    raise ValueError(f"{name}: threshold is {threshold!r}; expected a finite number")
  return float(threshold)


def conditional_probabilities(co_occurrence: Any, counts: Any) -> np.ndarray:
  """``P = N / n[:, None]``, float64 ``[C, C]``: row ``i`` of the co-occurrence counts ``N``
  divided by the count ``n_i`` of concept ``i`` (the first step of :func:`!gen_A_concept`,
  ``_adj / _nums[:, np.newaxis]``). ``N`` must be a finite non-negative ``[C, C]`` matrix
  and ``n`` ``C`` positive counts."""
  name = "conditional_probabilities"
  matrix = _matrix(name, co_occurrence, "co_occurrence")
  return matrix / _counts(name, counts, matrix.shape[0])[:, None]


def rescaled_adjacency(probabilities: Any, *, t: float = 5.0, p: float = 0.02) -> np.ndarray:
  """``t ** (P - p) - t ** -p`` elementwise, float64 (official :func:`!rescale_adj_matrix`,
  eq. 2 of the paper, with its defaults ``t=5``, ``p=0.02``): 0 at ``P = 0``, below ``P``
  for small ``P`` and above it for large ``P``."""
  return _rescale(_matrix("rescaled_adjacency", probabilities, "probabilities"), t, p)


def _rescale(matrix: np.ndarray, t: float = 5.0, p: float = 0.02) -> np.ndarray:
  with np.errstate(over="ignore"):  # P > ~440 (co-occurrence far above the count): inf
    return np.power(t, matrix - p) - np.power(t, -p)


def thresholded_adjacency(matrix: Any, threshold: float = THRESHOLD) -> np.ndarray:
  """Eq. 3 of the paper as :func:`!gen_A_concept` writes it: ``B = A.copy();
  B[B < t] = 0; B[B >= t] = 1`` (in that order, so with ``t <= 0`` every entry becomes 1),
  then ``B * 0.25 / (B.sum(0) + 1e-6)``: each column of ones scaled to sum to about
  ``0.25``; an all-zero column stays zero. Float64 ``[C, C]``."""
  name = "thresholded_adjacency"
  return _threshold_scale(_matrix(name, matrix, "matrix"), _threshold(name, threshold))


def _binarize(matrix: np.ndarray, t: float) -> np.ndarray:
  binary = matrix.copy()
  binary[binary < t] = 0
  binary[binary >= t] = 1
  return binary


def _threshold_scale(matrix: np.ndarray, t: float) -> np.ndarray:
  binary = _binarize(matrix, t)
  return binary * 0.25 / (binary.sum(0, keepdims=True) + 1e-6)


def concept_adjacency(
  co_occurrence: Any,
  counts: Any,
  *,
  threshold: float = THRESHOLD,
  mode: str = "Complex",
  key: str = "adj_all",
) -> np.ndarray:
  """One matrix of official :func:`!gen_A_concept`, float64 ``[C, C]``.

  With ``P = conditional_probabilities(co_occurrence, counts)``:

  - ``mode="Complex"`` (CVSE's): ``A = thresholded_adjacency(rescaled_adjacency(P), t)``;
  - ``mode="ML_GCN"``: ``A = thresholded_adjacency(P, t)``, except for ``key="adj_O_M"``,
    where the official typo drops the ``0.25`` scaling and ``A`` is the 0/1 matrix;
  - ``mode="My_rescale"``: ``A = rescaled_adjacency(P)``.

  Then, for ``key`` ``"adj_O_P"`` or ``"adj_O_M"`` only, ``A = A / (A.sum(0) + 1e-8)``
  (columns); ``"adj_all"`` (the matrix the model uses) skips it. Last ``A + I``.
  """
  name = "concept_adjacency"
  if mode not in MODES:
    raise ValueError(f"{name}: mode is {mode!r}; expected one of {', '.join(MODES)}")
  if key not in ADJACENCY_KEYS:
    raise ValueError(f"{name}: key is {key!r}; expected one of {', '.join(ADJACENCY_KEYS)}")
  t = _threshold(name, threshold)
  probabilities = conditional_probabilities(co_occurrence, counts)
  if mode == "Complex":
    adjacency = _threshold_scale(_rescale(probabilities), t)
  elif mode == "My_rescale":
    adjacency = _rescale(probabilities)
  elif key == "adj_O_M":  # ML_GCN: `_adj_OPC = _adj_OMC * 0.25 / ...` leaves _adj_OMC binary
    adjacency = _binarize(probabilities, t)
  else:
    adjacency = _threshold_scale(probabilities, t)
  if key != "adj_all":
    adjacency = adjacency / (adjacency.sum(0, keepdims=True) + 1e-8)
  return adjacency + np.identity(adjacency.shape[0])


def normalized_adjacency(adjacency: Any) -> np.ndarray:
  """Official :func:`!gen_adj`: ``d = A.sum(1) ** -0.5`` (row sums), ``D = diag(d)``,
  ``(A D)^T D = D A^T D``, i.e. ``out_ij = A_ji / sqrt(r_i r_j)``, float64 ``[C, C]``.

  Note the transpose: the GCN computes ``out @ x``, so node ``i`` gathers column ``i`` of
  ``A``. A symmetric ``A`` gives a symmetric result. ``A`` must be finite, non-negative and
  have positive row sums (official: a zero row sum gives ``inf``, a negative one ``nan``);
  the matrices of :func:`!concept_adjacency` always do (the identity is added).
  """
  name = "normalized_adjacency"
  matrix = _matrix(name, adjacency, "adjacency")
  row_sums = matrix.sum(1)
  if not (row_sums > 0).all():
    raise ValueError(f"{name}: adjacency has {np.sum(~(row_sums > 0))} rows summing to 0; "
                     "expected positive row sums (the official code gives inf or nan)")  # fmt: skip
  d = np.diag(np.power(row_sums, -0.5))
  return (matrix @ d).T @ d


def official_adjacencies(
  co_occurrence: Mapping[str, Any], counts: Any, *, threshold: float = THRESHOLD
) -> dict[str, np.ndarray]:
  """The three matrices ``C_GCN.__init__`` stores as the parameters ``adj_O_P``,
  ``adj_O_M`` and ``adj_all`` (before :func:`!normalized_adjacency`), float64 ``[C, C]``
  in that key order: :func:`!concept_adjacency` of each co-occurrence matrix with
  ``mode="Complex"`` and the model's ``threshold=0.3``. ``co_occurrence`` maps exactly
  those three keys to ``[C, C]`` counts (as read by
  :func:`!jitr.data.cvse_concepts.read_concept_statistics`, whose ``counts`` are ``counts``).
  """
  if not isinstance(co_occurrence, Mapping) or set(co_occurrence) != set(ADJACENCY_KEYS):
    keys = list(co_occurrence) if isinstance(co_occurrence, Mapping) else type(co_occurrence)
    raise ValueError(f"official_adjacencies: co_occurrence is {keys}; expected a mapping of "
                     f"exactly {', '.join(ADJACENCY_KEYS)}")  # fmt: skip
  return {
    key: concept_adjacency(co_occurrence[key], counts, threshold=threshold, key=key)
    for key in ADJACENCY_KEYS
  }
