"""A device's query rows scored and put through the objective a chunk at a time
(``config.query_chunks``): no ``[b, N]`` matrix of the device is ever whole.

Every term of the objective is a sum over queries (:mod:`jitr.losses.query_rows`), so a
device's sums are the sums of its chunks' sums. For chunk ``c`` of ``r = b/k`` rows, the
device scores its images against every caption and every image against its captions
(``[r, N]`` each), builds those queries' targets and graded rows (``graded_fn`` on the
chunk's rows, :func:`!jitr.training.row_exchange.queries_of`) and takes their term sums;
the chunks run in a ``lax.map`` whose body is rematerialised (``jax.checkpoint``), so the
backward pass scores a chunk again instead of keeping its ``[r, N]`` residuals. Peak
memory is ``O(r·N)`` a device instead of ``O(b·N)``: the same value and gradient, one more
scoring pass of compute. Only for embedding models (the scores are ``score(img, txt)`` of
gathered embeddings; a similarity model's pair scoring exchanges whole blocks).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

from jitr.training import row_exchange
from jitr.training.row_exchange import Batch, DeviceQueries, GradedFn

#: ``score(images, captions) -> [Q, C]`` of some images against some captions.
Score = Callable[[Any, Any], jax.Array]
#: ``sums(i2t [r, N], t2i [r, N], queries) -> pytree``: what the chunks add up.
Sums = Callable[[jax.Array, jax.Array, DeviceQueries], Any]


def chunk_rows(rows: int, chunks: int) -> int:
  """``rows / chunks``; one line when ``chunks`` does not divide a device's ``rows``."""
  if rows % chunks:
    raise ValueError(
      f"config.query_chunks: {chunks} chunks do not split a device's {rows} rows; "
      "expected a divisor"
    )
  return rows // chunks


def chunked_sums(
  sums: Sums,
  score: Score,
  images: Any,
  captions: Any,
  fields: Batch,
  graded_fn: GradedFn | None,
  *,
  chunks: int,
  axis_name: str | None,
) -> Any:
  """``Σ_c sums(i2t_c, t2i_c, queries_c)`` over ``chunks`` chunks of this device's rows.

  ``images, captions``: this device's embeddings (``[b, ...]`` leaves); ``fields``: the
  non-model fields of its rows (ids, validity, stored relevance data), all-gathered here
  once. Chunk ``c`` holds rows ``c·r … c·r + r − 1`` (global indices offset by the
  device's ``d·b``, so random draws keyed by them do not change).
  """
  b = fields["image_ids"].shape[0]
  size = chunk_rows(b, chunks)
  shared = {k: row_exchange.gather(v, axis_name) for k, v in fields.items()}
  gather = lambda tree: jax.tree.map(lambda x: row_exchange.gather(x, axis_name), tree)
  every_image, every_caption = gather(images), gather(captions)
  start = 0 if axis_name is None else jax.lax.axis_index(axis_name) * b

  @jax.checkpoint
  def one(c):
    take = lambda tree: jax.tree.map(
      lambda x: jax.lax.dynamic_slice_in_dim(x, c * size, size, axis=0), tree
    )
    index = start + c * size + jnp.arange(size)
    queries = row_exchange.queries_of(take(fields), shared, index, graded_fn)
    i2t = score(take(images), every_caption)
    t2i = score(every_image, take(captions)).T
    return sums(i2t, t2i, queries)

  per_chunk = jax.lax.map(one, jnp.arange(chunks))
  return jax.tree.map(lambda x: jnp.sum(x, axis=0), per_chunk)
