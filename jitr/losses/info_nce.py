"""CLIP's contrastive loss (Radford et al., "Learning Transferable Visual Models From Natural
Language Supervision", ICML 2021; open_clip's ``ClipLoss``): the symmetric cross-entropy of
the scaled similarities, each query's annotated pairs its classes."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jitr.losses import checks
from jitr.losses import query_rows as qr


def info_nce_query(
  query: qr.Query, *, logit_scale: float = 1 / 0.07
) -> tuple[jax.Array, jax.Array]:
  """One query's InfoNCE and whether it counts (it has a valid positive).

  With ``z_j = logit_scale · s_j`` over the query's valid candidates V and its valid
  positives P: ``−log(Σ_{p∈P} exp z_p / Σ_{j∈V} exp z_j)``. With one positive per query
  (CLIP's batch: the diagonal) this is the cross-entropy of the query's row with its pair
  as the label; several positives of one query (two captions of an image in a batch) are
  one class, none of them a negative of the others.
  """
  valid = query.where
  pos = query.positives & valid
  z = logit_scale * query.sim
  every = jax.nn.logsumexp(jnp.where(valid, z, -jnp.inf))
  matched = jax.nn.logsumexp(jnp.where(pos, z, -jnp.inf))
  counts = jnp.any(pos)
  return jnp.where(counts, every - jnp.where(counts, matched, 0.0), 0.0), counts


#: CLIP's loss: each direction's mean cross-entropy, the two halved (``(L_i2t + L_t2i) / 2``
#: as open_clip's ``ClipLoss``).
INFO_NCE = qr.QueryLoss(
  info_nce_query,
  ranges={"logit_scale": checks.POSITIVE},
  direction_weights=lambda hyper: (0.5, 0.5),
)

#: The core of :func:`info_nce` on a block of query rows, already halved per direction.
info_nce_queries = INFO_NCE.per_query

info_nce = INFO_NCE.function(
  """CLIP's symmetric InfoNCE, ``(L_i2t + L_t2i) / 2`` (open_clip's ``ClipLoss``).

  For a query with logits ``z = logit_scale · s`` over its valid candidates and its
  positives P: ``−log(Σ_{p∈P} exp z_p / Σ_j exp z_j)``; ``L_i2t`` is the mean over image
  queries (rows of ``sim``), ``L_t2i`` over caption queries (its columns). A learnable
  temperature scales ``sim`` before the loss (``logit_scale=1``): its gradient then flows
  through ``sim``, as the towers' train step does.

  Args:
    sim: ``[N_img, N_txt]`` similarities (cosines of unit embeddings).
    positives: bool annotated pairs (default: identity).
    where: bool mask of valid pairs, broadcastable to ``sim``.
    logit_scale: the multiplier of ``sim`` (CLIP's ``exp(t)``: 1/0.07 at initialisation,
      at most 100 in training).
    reduction: ``"mean"``, ``"sum"`` or ``"none"``.
  """
)
