"""In-batch graded matrices from stored relevance data: the one place they are built.

Two kinds of stored data (see :mod:`jitr.relevance.records`) become an
``[N_img, N_txt]`` matrix of a batch's images x captions:

* caption vectors of a cosine estimator (``sentence``, ``lsa``): each image's
  reference captions against the batch's captions, combined over the references
  with ``aggregate`` -- :func:`reference_cosine` (the raw cosine, LSEH's S) and
  :func:`relevance_from_embeddings` (RSC: ``(1 + agg_k cos) / 2``, positives 1);
* top-K lists of any estimator: :func:`topk_score_matrix` (the raw scores, SAM's
  phi) and :func:`relevance_from_topk` (``clip(score / scale, 0, 1)``, positives 1);
* a teacher dual encoder's image and caption embeddings:
  :func:`relevance_from_pair_embeddings` (``(1 + cos(e_i, t_j)) / 2``, positives 1);
* token-coverage profiles (the ``tokens`` estimator): how much of each caption the
  image's references cover, :func:`relevance_from_token_coverage`, positives 1;
* class labels of a labelled vector dataset: the overlap of two items' label sets,
  :func:`relevance_from_labels` (Jaccard ``|A ∩ B| / |A ∪ B|``, positives 1), and whether
  they share a class, :func:`shares_a_label` (the in-batch positives of such data).

Several relevance matrices combine elementwise by :func:`harmonic_mean_relevance`
(``2ab/(a+b)``, as RefCLIP-S combines its image and reference scores) or
:func:`arithmetic_mean_relevance`.
"""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp

from jitr.losses import checks
from jitr.losses.normalize import l2_normalize

AGGREGATES = ("max", "mean")


def _with_positives(matrix: jax.Array, positives: jax.Array | None) -> jax.Array:
  if positives is None:
    return matrix
  chex.assert_shape(positives, matrix.shape)
  return jnp.where(positives, 1.0, matrix)


def reference_cosine(
  reference_embeddings: jax.Array,
  caption_embeddings: jax.Array,
  *,
  reference_mask: jax.Array | None = None,
  aggregate: str = "max",
) -> jax.Array:
  """``agg_k cos(g(T_i^k), g(T_j))`` over image i's valid references, in ``[-1, 1]``.

  ``aggregate="max"`` takes the best reference (RSC); ``"mean"`` averages the
  cosines over the valid references. An image with no valid reference gets -1.

  Args:
    reference_embeddings: ``[N_img, K, D]`` embeddings g of each image's K references.
    caption_embeddings: ``[N_txt, D]`` embeddings of the batch's captions.
    reference_mask: optional bool ``[N_img, K]`` of valid references.
    aggregate: ``"max"`` or ``"mean"``.

  Returns:
    ``[N_img, N_txt]`` float32.

  >>> import jax.numpy as jnp
  >>> refs = jnp.array([[[1.0, 0.0], [0.0, 1.0]]])
  >>> caps = jnp.array([[1.0, 0.0]])
  >>> reference_cosine(refs, caps).tolist(), reference_cosine(refs, caps, aggregate="mean").tolist()
  ([[1.0]], [[0.5]])
  """
  if aggregate not in AGGREGATES:
    raise ValueError(f"aggregate: expected one of {AGGREGATES}, got {aggregate!r}")
  chex.assert_rank(reference_embeddings, 3)
  chex.assert_rank(caption_embeddings, 2)
  n_img, n_ref, dim = reference_embeddings.shape
  chex.assert_axis_dimension(caption_embeddings, 1, dim)
  mask = jnp.ones((n_img, n_ref), bool) if reference_mask is None else reference_mask
  chex.assert_shape(mask, (n_img, n_ref))
  references, captions = l2_normalize(reference_embeddings), l2_normalize(caption_embeddings)
  # one [N_img, N_txt] cosine per reference, folded in at once: never [N_img, N_txt, K]
  combined = jnp.full(
    (n_img, captions.shape[0]), -1.0 if aggregate == "max" else 0.0, references.dtype
  )
  for k in range(n_ref):
    cosine, valid = references[:, k] @ captions.T, mask[:, k, None]
    if aggregate == "max":
      combined = jnp.maximum(combined, jnp.where(valid, cosine, -1.0))
    else:
      combined = combined + jnp.where(valid, cosine, 0.0)
  if aggregate == "mean":
    count = jnp.sum(mask, axis=-1)[:, None]
    combined = jnp.where(count > 0, combined / jnp.maximum(count, 1), -1.0)
  return jnp.clip(combined, -1.0, 1.0)


def relevance_from_embeddings(
  reference_embeddings: jax.Array,
  caption_embeddings: jax.Array,
  *,
  positives: jax.Array | None = None,
  reference_mask: jax.Array | None = None,
  aggregate: str = "max",
) -> jax.Array:
  """``r(V_i, T_j) = (1 + agg_k cos(g(T_i^k), g(T_j)))/2``, positives set to 1.

  ``agg`` is ``max`` (RSC, the default) or ``mean`` over the valid references
  (:func:`reference_cosine`).

  Args:
    reference_embeddings: ``[N_img, K, D]`` embeddings g of each image's K
      reference captions.
    caption_embeddings: ``[N_txt, D]`` embeddings of the batch's captions.
    positives: optional bool ``[N_img, N_txt]``; those pairs get relevance 1.
    reference_mask: optional bool ``[N_img, K]`` of valid references (an image
      with none gets relevance 0 except for its positives).
    aggregate: ``"max"`` or ``"mean"``.

  Returns:
    ``[N_img, N_txt]`` relevance in [0, 1].

  >>> import jax.numpy as jnp
  >>> refs = jnp.array([[[1.0, 0.0], [0.0, 1.0]]])
  >>> caps = jnp.array([[1.0, 1.0], [-1.0, 0.0]])
  >>> # (1 + cos 45°)/2 and (1 + 0)/2
  >>> [round(float(r), 4) for r in relevance_from_embeddings(refs, caps)[0]]
  [0.8536, 0.5]
  >>> [round(float(r), 4) for r in relevance_from_embeddings(refs, caps, aggregate="mean")[0]]
  [0.8536, 0.25]
  """
  cosine = reference_cosine(
    reference_embeddings, caption_embeddings, reference_mask=reference_mask, aggregate=aggregate
  )
  return _with_positives(jnp.clip((1.0 + cosine) / 2.0, 0.0, 1.0), positives)


def topk_score_matrix(
  topk_indices: jax.Array, topk_scores: jax.Array, caption_indices: jax.Array
) -> jax.Array:
  """``m_ij = s_ik`` where ``topk_indices[i, k] == caption_indices[j]``, 0 when caption j is
  not in image i's list (entries with a negative index are padding).

  Args:
    topk_indices: ``[N_img, K]`` int caption indices (dataset-wide).
    topk_scores: ``[N_img, K]`` raw scores.
    caption_indices: ``[N_txt]`` int dataset-wide indices of the batch's captions.

  Returns:
    ``[N_img, N_txt]`` float32 raw scores.

  >>> topk_score_matrix(jnp.array([[3, 1]]), jnp.array([[5.0, 2.0]]), jnp.array([1, 2, 3])).tolist()
  [[2.0, 0.0, 5.0]]
  """
  chex.assert_rank([topk_indices, topk_scores, caption_indices], [2, 2, 1])
  chex.assert_equal_shape([topk_indices, topk_scores])
  match = (topk_indices[:, :, None] == caption_indices[None, None, :]) & (
    topk_indices[:, :, None] >= 0
  )
  scores = topk_scores.astype(jnp.float32)[:, :, None]
  best = jnp.max(jnp.where(match, scores, -jnp.inf), axis=1)
  return jnp.where(jnp.any(match, axis=1), best, 0.0)


def relevance_from_topk(
  topk_indices: jax.Array,
  topk_scores: jax.Array,
  caption_indices: jax.Array,
  *,
  scale: float = 1.0,
  positives: jax.Array | None = None,
) -> jax.Array:
  """``r_ij = clip(m_ij / scale, 0, 1)`` of :func:`topk_score_matrix`, positives set to 1.

  ``scale`` is the records header's ``relevance.scale`` (10 for CIDEr-D, 1 for
  the cosine estimators): a finite number > 0, checked at trace time unless traced.

  >>> relevance_from_topk(
  ...   jnp.array([[3, 1]]), jnp.array([[5.0, 2.0]]), jnp.array([1, 2, 3]), scale=10.0
  ... ).tolist()
  [[0.20000000298023224, 0.0, 0.5]]
  """
  checks.check_positive("scale", scale)
  scores = topk_score_matrix(topk_indices, topk_scores, caption_indices)
  return _with_positives(jnp.clip(scores / scale, 0.0, 1.0), positives)


def relevance_from_pair_embeddings(
  image_embeddings: jax.Array,
  caption_embeddings: jax.Array,
  *,
  positives: jax.Array | None = None,
) -> jax.Array:
  """``r(V_i, T_j) = (1 + cos(e_i, t_j))/2``, positives set to 1: a dual encoder's
  image-caption similarity (the teacher relevance) mapped to [0, 1].

  Args:
    image_embeddings: ``[N_img, D]`` image embeddings e (normalised here).
    caption_embeddings: ``[N_txt, D]`` caption embeddings t (normalised here).
    positives: optional bool ``[N_img, N_txt]``; those pairs get relevance 1.

  Returns:
    ``[N_img, N_txt]`` relevance in [0, 1].

  >>> import jax.numpy as jnp
  >>> img = jnp.array([[1.0, 0.0]])
  >>> caps = jnp.array([[1.0, 1.0], [0.0, 2.0], [-3.0, 0.0]])
  >>> [round(float(r), 4) for r in relevance_from_pair_embeddings(img, caps)[0]]
  [0.8536, 0.5, 0.0]
  """
  chex.assert_rank([image_embeddings, caption_embeddings], 2)
  chex.assert_axis_dimension(caption_embeddings, 1, image_embeddings.shape[1])
  cosine = jnp.einsum(
    "id,jd->ij",
    l2_normalize(image_embeddings.astype(jnp.float32)),
    l2_normalize(caption_embeddings.astype(jnp.float32)),
  )
  return _with_positives(jnp.clip((1.0 + cosine) / 2.0, 0.0, 1.0), positives)


def relevance_from_token_coverage(
  reference_profiles: jax.Array,
  caption_profiles: jax.Array,
  *,
  positives: jax.Array | None = None,
) -> jax.Array:
  """``r(V_i, T_j) = clip(Σ_c h_j[c] · max_k m(T_i^k)[c], 0, 1)``, positives set to 1.

  Each stored vector is ``[m ; h]`` (``jitr.relevance.token_coverage``): ``m[c]`` the
  best cosine between codebook entry ``c`` and any token of the caption, ``h[c]`` the
  caption's idf-weighted share of tokens nearest to entry ``c`` (``Σ_c h[c] = 1``). So
  ``r`` is the idf-weighted mean, over the caption's tokens, of how well the image's
  references cover each token (a BERTScore precision through the codebook): a
  partial caption whose every token the references state scores about 1.

  Args:
    reference_profiles: ``[N_img, K, 2C]`` vectors of each image's K references.
    caption_profiles: ``[N_txt, 2C]`` vectors of the batch's captions.
    positives: optional bool ``[N_img, N_txt]``; those pairs get relevance 1.

  Returns:
    ``[N_img, N_txt]`` relevance in [0, 1].

  >>> import jax.numpy as jnp
  >>> refs = jnp.array([[[0.9, 0.1, 1.0, 0.0], [0.2, 0.8, 0.0, 1.0]]])  # m ; h of 2 refs
  >>> caps = jnp.array([[1.0, 0.3, 0.5, 0.5], [0.1, 0.2, 0.0, 1.0]])
  >>> [round(float(r), 4) for r in relevance_from_token_coverage(refs, caps)[0]]
  [0.85, 0.8]
  """
  chex.assert_rank([reference_profiles, caption_profiles], [3, 2])
  chex.assert_axis_dimension(caption_profiles, 1, reference_profiles.shape[2])
  codes = reference_profiles.shape[2] // 2
  image_cover = jnp.max(reference_profiles[..., :codes].astype(jnp.float32), axis=1)
  shares = caption_profiles[:, codes:].astype(jnp.float32)
  coverage = jnp.einsum("ic,jc->ij", image_cover, shares)
  return _with_positives(jnp.clip(coverage, 0.0, 1.0), positives)


def _label_counts(image_labels: jax.Array, caption_labels: jax.Array):
  """``(|A ∩ B| [N_img, N_txt], |A| [N_img, 1], |B| [1, N_txt])`` of 0/1 label rows."""
  chex.assert_rank([image_labels, caption_labels], 2)
  chex.assert_axis_dimension(caption_labels, 1, image_labels.shape[1])
  a = (jnp.asarray(image_labels) > 0).astype(jnp.float32)
  b = (jnp.asarray(caption_labels) > 0).astype(jnp.float32)
  both = jnp.einsum("ic,jc->ij", a, b)
  return both, jnp.sum(a, axis=1, keepdims=True), jnp.sum(b, axis=1)[None, :]


def shares_a_label(image_labels: jax.Array, caption_labels: jax.Array) -> jax.Array:
  """``|A_i ∩ B_j| > 0``: whether item ``i`` and item ``j`` share at least one class (the
  relevance of class MAP, and the in-batch positives of a labelled vector dataset).

  Args:
    image_labels: ``[N_img, C]`` 0/1 (or bool) class memberships ``A_i``.
    caption_labels: ``[N_txt, C]`` 0/1 (or bool) class memberships ``B_j``.

  Returns:
    bool ``[N_img, N_txt]``.

  >>> import jax.numpy as jnp
  >>> shares_a_label(jnp.array([[1, 1, 0]]), jnp.array([[0, 1, 0], [0, 0, 1]])).tolist()
  [[True, False]]
  """
  both, _, _ = _label_counts(image_labels, caption_labels)
  return both > 0


def relevance_from_labels(
  image_labels: jax.Array, caption_labels: jax.Array, *, positives: jax.Array | None = None
) -> jax.Array:
  """``r(i, j) = |A_i ∩ B_j| / |A_i ∪ B_j|`` (the Jaccard index of the two label sets; 0
  when both are empty), positives set to 1: graded relevance from label overlap. With one
  label per item it is 1 for the same class and 0 otherwise; with several it grades a
  partial overlap (``{cat, sofa}`` against ``{cat}``: 1/2).

  Args:
    image_labels: ``[N_img, C]`` 0/1 (or bool) class memberships ``A_i``.
    caption_labels: ``[N_txt, C]`` 0/1 (or bool) class memberships ``B_j``.
    positives: optional bool ``[N_img, N_txt]``; those pairs get relevance 1.

  Returns:
    ``[N_img, N_txt]`` relevance in [0, 1].

  >>> import jax.numpy as jnp
  >>> a = jnp.array([[1, 1, 0]])
  >>> b = jnp.array([[1, 1, 0], [0, 1, 0], [0, 1, 1], [0, 0, 1]])
  >>> [round(float(r), 4) for r in relevance_from_labels(a, b)[0]]
  [1.0, 0.5, 0.3333, 0.0]
  """
  both, size_a, size_b = _label_counts(image_labels, caption_labels)
  union = size_a + size_b - both
  jaccard = jnp.where(union > 0, both / jnp.maximum(union, 1.0), 0.0)
  return _with_positives(jaccard, positives)


def harmonic_mean_relevance(*relevances: jax.Array) -> jax.Array:
  """``n / Σ_k 1/r_k`` elementwise (``2ab/(a+b)`` for two, RefCLIP-S's combination),
  0 where any ``r_k`` is 0; every input in [0, 1], so the result is too.

  >>> import jax.numpy as jnp
  >>> out = harmonic_mean_relevance(jnp.array([0.5, 1.0, 0.0]), jnp.array([1.0, 1.0, 0.7]))
  >>> [round(float(r), 4) for r in out]  # 2 * 0.5 * 1 / 1.5
  [0.6667, 1.0, 0.0]
  """
  stacked = _stack_relevances(relevances)
  safe = jnp.where(stacked > 0, stacked, 1.0)
  mean = stacked.shape[0] / jnp.sum(1.0 / safe, axis=0)
  return jnp.where(jnp.all(stacked > 0, axis=0), mean, 0.0)


def arithmetic_mean_relevance(*relevances: jax.Array) -> jax.Array:
  """``Σ_k r_k / n`` elementwise.

  >>> import jax.numpy as jnp
  >>> out = arithmetic_mean_relevance(jnp.array([0.5, 0.0]), jnp.array([1.0, 0.7]))
  >>> [round(float(r), 4) for r in out]
  [0.75, 0.35]
  """
  return jnp.mean(_stack_relevances(relevances), axis=0)


def _stack_relevances(relevances) -> jax.Array:
  if len(relevances) < 2:
    raise ValueError(f"combining relevance: expected at least 2 matrices, got {len(relevances)}")
  chex.assert_equal_shape(relevances)
  return jnp.stack([jnp.asarray(r, jnp.float32) for r in relevances])
