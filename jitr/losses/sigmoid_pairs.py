"""SigLIP's pairwise sigmoid loss (Zhai et al., "Sigmoid Loss for Language Image
Pre-Training", ICCV 2023; open_clip's ``SigLipLoss``): every (image, caption) pair a binary
classification, positive for the annotated pairs."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jitr.losses import checks
from jitr.losses import query_rows as qr


def sigmoid_pairs_query(
  query: qr.Query, *, logit_scale: float = 10.0, logit_bias: float = -10.0
) -> tuple[jax.Array, jax.Array]:
  """One query's sigmoid loss and whether it counts (it has a valid candidate).

  ``Σ_{j∈V} −log σ(y_j · (logit_scale · s_j + logit_bias))`` over the query's valid
  candidates V, ``y_j = +1`` for its annotated positives and ``−1`` for the others.
  """
  valid = query.where
  labels = jnp.where(query.positives, 1.0, -1.0).astype(query.sim.dtype)
  logits = logit_scale * query.sim + logit_bias
  pairs = -jax.nn.log_sigmoid(labels * logits)
  return jnp.sum(jnp.where(valid, pairs, 0.0)), jnp.any(valid)


#: SigLIP's loss counts every pair once: the image queries' rows (their mean is open_clip's
#: ``Σ_pairs / N``), the caption queries weighted 0.
SIGMOID_PAIRS = qr.QueryLoss(
  sigmoid_pairs_query,
  ranges={"logit_scale": checks.POSITIVE, "logit_bias": checks.FINITE},
  direction_weights=lambda hyper: (1.0, 0.0),
)

#: The core of :func:`sigmoid_pairs` on a block of query rows (caption queries weighted 0).
sigmoid_pairs_queries = SIGMOID_PAIRS.per_query

sigmoid_pairs = SIGMOID_PAIRS.function(
  """SigLIP's pairwise sigmoid loss (open_clip's ``SigLipLoss``).

  ``(1/N_img) Σ_{i, j valid} −log σ(y_ij · (logit_scale · s_ij + logit_bias))`` with
  ``y_ij = +1`` for the annotated pairs and ``−1`` for every other pair: each pair is
  counted once, through the image queries (the caption queries are weighted 0). A
  learnable temperature and bias are applied to ``sim`` before the loss (``logit_scale=1``,
  ``logit_bias=0``).

  Args:
    sim: ``[N_img, N_txt]`` similarities (cosines of unit embeddings).
    positives: bool annotated pairs (default: identity).
    where: bool mask of valid pairs, broadcastable to ``sim``.
    logit_scale: the multiplier of ``sim`` (SigLIP's ``exp(t')``: 10 at initialisation).
    logit_bias: the bias added to the logits (SigLIP's ``b``: −10 at initialisation).
    reduction: ``"mean"``, ``"sum"`` or ``"none"``.
  """
)
