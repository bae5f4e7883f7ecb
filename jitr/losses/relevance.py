"""In-batch RSC relevance (Listwise ITR) from precomputed caption embeddings."""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp

from jitr.losses.normalize import l2_normalize


def relevance_from_embeddings(
  reference_embeddings: jax.Array,
  caption_embeddings: jax.Array,
  *,
  positives: jax.Array | None = None,
  reference_mask: jax.Array | None = None,
) -> jax.Array:
  """``r(V_i, T_j) = (1 + max_k cos(g(T_i^k), g(T_j)))/2``, positives set to 1.

  Args:
    reference_embeddings: ``[N_img, K, D]`` embeddings g of each image's K
      reference captions.
    caption_embeddings: ``[N_txt, D]`` embeddings of the batch's captions.
    positives: optional bool ``[N_img, N_txt]``; those pairs get relevance 1.
    reference_mask: optional bool ``[N_img, K]`` of valid references (an image
      with none gets relevance 0 except for its positives).

  Returns:
    ``[N_img, N_txt]`` relevance in [0, 1].

  >>> import jax.numpy as jnp
  >>> refs = jnp.array([[[1.0, 0.0], [0.0, 1.0]]])
  >>> caps = jnp.array([[1.0, 1.0], [-1.0, 0.0]])
  >>> [round(float(r), 4) for r in relevance_from_embeddings(refs, caps)[0]]  # (1+cos45°)/2, (1+0)/2
  [0.8536, 0.5]
  """
  chex.assert_rank(reference_embeddings, 3)
  chex.assert_rank(caption_embeddings, 2)
  n_img, n_ref, dim = reference_embeddings.shape
  chex.assert_axis_dimension(caption_embeddings, 1, dim)
  unit_refs, unit_caps = l2_normalize(reference_embeddings), l2_normalize(caption_embeddings)
  cosine = jnp.einsum("ikd,jd->ijk", unit_refs, unit_caps)
  if reference_mask is not None:
    chex.assert_shape(reference_mask, (n_img, n_ref))
    cosine = jnp.where(reference_mask[:, None, :], cosine, -1.0)
  relevance = jnp.clip((1.0 + jnp.max(cosine, axis=-1)) / 2.0, 0.0, 1.0)
  if positives is not None:
    chex.assert_shape(positives, relevance.shape)
    relevance = jnp.where(positives, 1.0, relevance)
  return relevance
