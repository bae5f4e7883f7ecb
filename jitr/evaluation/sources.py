"""Score sources: where the (query x gallery) matrices come from, chunk by chunk.

Every metric in :mod:`jitr.evaluation` reads its scores (similarities, graded
relevance, semantic scores) one block of query rows at a time, so the full
matrix never has to exist in memory. A source is anything with

* ``num_queries`` / ``num_gallery`` (ints), and
* ``block(rows) -> jax.Array`` of shape ``(len(rows), num_gallery)``, float32,
  where ``rows`` is a 1-D integer numpy array of query indices.

Three implementations cover the cases:

* :class:`DenseScores` -- an in-memory (numpy, ``np.memmap`` or jax) matrix,
  optionally read transposed (the text-to-image direction of an
  ``(images, captions)`` similarity matrix is ``DenseScores(sim, transpose=True)``).
* :class:`EmbeddingScores` -- ``queries @ gallery.T`` computed per block with a
  jitted matmul: bounded memory for 30K x 150K galleries and beyond.
* :class:`CallableScores` -- any ``fn(rows) -> (len(rows), num_gallery)`` array.

:func:`as_scores` turns a plain 2-D array into a :class:`DenseScores`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from typing import Any, Protocol, runtime_checkable

import jax
import jax.numpy as jnp
import numpy as np

from jitr.evaluation.checks import check_sizes

__all__ = [
  "Scores",
  "DenseScores",
  "EmbeddingScores",
  "CallableScores",
  "as_scores",
  "iter_chunks",
  "default_chunk_size",
]

# Default memory budget for one float32 block of scores (bytes).
DEFAULT_BLOCK_BYTES = 8 * 1024 * 1024
# Small blocks: they stay in cache and under the allocator's mmap threshold,
# so no page faults per block (large fresh buffers dominate the time on CPU).


@runtime_checkable
class Scores(Protocol):
  """A (num_queries x num_gallery) score matrix readable by blocks of rows."""

  @property
  def num_queries(self) -> int: ...

  @property
  def num_gallery(self) -> int: ...

  def block(self, rows: np.ndarray) -> jax.Array:
    """Scores of the queries ``rows`` against the whole gallery, float32."""
    ...


def _is_contiguous(rows: np.ndarray) -> bool:
  return (
    rows.size > 0
    and int(rows[-1]) - int(rows[0]) + 1 == rows.size
    and bool(np.all(np.diff(rows) == 1))
  )


@dataclasses.dataclass(frozen=True)
class DenseScores:
  """A dense matrix, read by rows (or by columns when ``transpose=True``).

  Attributes:
    matrix: a 2-D array (numpy, ``np.memmap`` or jax). With ``transpose=False``
      row ``q`` holds query ``q``'s scores; with ``transpose=True`` column ``q``
      does (the caption-to-image direction of an ``(images, captions)`` matrix).
    transpose: read columns as queries.
  """

  matrix: Any
  transpose: bool = False

  def __post_init__(self):
    shape = getattr(self.matrix, "shape", None)
    if shape is None or len(shape) != 2:
      raise ValueError(f"DenseScores: `matrix` must be a 2-D array, got shape {shape}")

  @property
  def num_queries(self) -> int:
    return int(self.matrix.shape[1] if self.transpose else self.matrix.shape[0])

  @property
  def num_gallery(self) -> int:
    return int(self.matrix.shape[0] if self.transpose else self.matrix.shape[1])

  def block(self, rows: np.ndarray) -> jax.Array:
    rows = np.asarray(rows)
    if _is_contiguous(rows):
      index = slice(int(rows[0]), int(rows[-1]) + 1)
    else:
      index = rows
    if isinstance(self.matrix, jax.Array):
      part = self.matrix[:, index] if self.transpose else self.matrix[index]
      part = part.astype(jnp.float32)
      return part.T if self.transpose else part
    part = self.matrix[:, index] if self.transpose else self.matrix[index]
    part = jnp.asarray(np.asarray(part, dtype=np.float32))
    return _transpose(part) if self.transpose else part


@jax.jit
def _transpose(x: jax.Array) -> jax.Array:
  return x.T


@jax.jit
def _matmul_t(q: jax.Array, g: jax.Array) -> jax.Array:
  return jnp.matmul(q, g.T, preferred_element_type=jnp.float32).astype(jnp.float32)


@dataclasses.dataclass(frozen=True)
class EmbeddingScores:
  """Scores ``s_ij = <q_i, g_j>`` computed block by block from embeddings.

  Memory is bounded by one ``(block, num_gallery)`` float32 block plus the two
  embedding matrices, whatever the number of queries. L2-normalise the
  embeddings beforehand for cosine similarity.

  Attributes:
    queries: ``(num_queries, dim)`` query embeddings.
    gallery: ``(num_gallery, dim)`` gallery embeddings.
  """

  queries: Any
  gallery: Any

  def __post_init__(self):
    qs = getattr(self.queries, "shape", None)
    gs = getattr(self.gallery, "shape", None)
    if qs is None or len(qs) != 2:
      raise ValueError(f"EmbeddingScores: `queries` must be (num_queries, dim), got shape {qs}")
    if gs is None or len(gs) != 2 or gs[1] != qs[1]:
      raise ValueError(
        "EmbeddingScores: `gallery` must be (num_gallery, dim) with the same "
        f"dim as `queries` {qs}, got shape {gs}"
      )
    object.__setattr__(self, "gallery", jnp.asarray(self.gallery))

  @property
  def num_queries(self) -> int:
    return int(self.queries.shape[0])

  @property
  def num_gallery(self) -> int:
    return int(self.gallery.shape[0])

  def transposed(self) -> EmbeddingScores:
    """The other retrieval direction (gallery items become the queries)."""
    return EmbeddingScores(queries=self.gallery, gallery=self.queries)

  def block(self, rows: np.ndarray) -> jax.Array:
    rows = np.asarray(rows)
    if isinstance(self.queries, jax.Array):
      q = self.queries[jnp.asarray(rows)]
    else:
      q = jnp.asarray(np.asarray(self.queries)[rows])
    return _matmul_t(q, self.gallery)


@dataclasses.dataclass(frozen=True)
class CallableScores:
  """Scores produced by ``fn(rows) -> array (len(rows), num_gallery)``."""

  fn: Callable[[np.ndarray], Any]
  num_queries: int
  num_gallery: int

  def block(self, rows: np.ndarray) -> jax.Array:
    out = jnp.asarray(self.fn(np.asarray(rows)), dtype=jnp.float32)
    if out.shape != (len(rows), self.num_gallery):
      raise ValueError(
        f"CallableScores: `fn` returned shape {out.shape} for {len(rows)} rows, "
        f"expected ({len(rows)}, {self.num_gallery})"
      )
    return out


def as_scores(x: Any, *, name: str = "scores") -> Scores:
  """A :class:`Scores` from a source or a 2-D array (read by rows)."""
  if isinstance(x, (DenseScores, EmbeddingScores, CallableScores)):
    return x
  if isinstance(x, Scores) and not hasattr(x, "shape"):
    return x
  shape = getattr(x, "shape", None)
  if shape is None:
    x = np.asarray(x)
    shape = x.shape
  if len(shape) != 2:
    raise ValueError(
      f"`{name}` must be a 2-D (queries, gallery) array or a Scores source, "
      f"got shape {tuple(shape)}"
    )
  if not (
    np.issubdtype(x.dtype, np.floating)
    or np.issubdtype(x.dtype, np.integer)
    or x.dtype == jnp.bfloat16
  ):
    raise ValueError(f"`{name}` must hold real numbers, got dtype {x.dtype}")
  return DenseScores(x)


def default_chunk_size(num_gallery: int, *, block_bytes: int = DEFAULT_BLOCK_BYTES) -> int:
  """Rows per block so that one float32 block takes about ``block_bytes``."""
  return int(max(8, min(1024, block_bytes // (4 * max(1, num_gallery)))))


def iter_chunks(rows: np.ndarray, chunk_size: int) -> Iterator[tuple[np.ndarray, int]]:
  """Yields ``(padded_rows, n_valid)``: fixed-size chunks of ``rows``.

  Every chunk has exactly ``min(chunk_size, len(rows))`` entries so that each
  jitted kernel compiles once; the last one is padded by repeating its final
  row and ``n_valid`` says how many entries are real.
  """
  rows = np.asarray(rows, dtype=np.int64)
  n = rows.shape[0]
  size = max(1, min(int(chunk_size), n))
  for start in range(0, n, size):
    part = rows[start : start + size]
    n_valid = part.shape[0]
    if n_valid < size:
      part = np.concatenate([part, np.full(size - n_valid, part[-1])])
    yield part, n_valid


def scores_like(values: Any, like: Scores, name: str) -> Scores:
  """``values`` as a score source shaped like ``like`` (one error naming ``name`` otherwise)."""
  other = as_scores(values, name=name)
  got, want = (other.num_queries, other.num_gallery), (like.num_queries, like.num_gallery)
  check_sizes(name, got, want, "scores")
  return other
