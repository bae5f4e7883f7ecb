"""CVSE behind the one :class:`~jitr.models.RetrievalModel` interface, with its own loss
terms as auxiliary losses (official ``CVSE.forward_loss``).

The official loss of a batch is ``3·T(f) + 5·T(e) + 1·T(c) + 2·KL`` with ``T`` the VSE++
max-violation triplet (summed over both directions and the batch) of the fused ``f``,
instance ``e`` and consensus ``c`` embeddings, and ``KL = Σ_b Σ_c p^t_bc (log p^t_bc −
log p^v_bc)`` (``nn.KLDivLoss`` of the visual log-distribution against the label-mixed
textual one). In jitr the objective of ``config.loss`` (any jitr loss) scores the fused
embeddings, and the model adds, per row ``b`` of the global batch::

    instance_b  = T_i2t(e^v_b) + T_t2i(e^t_b)        consensus_b = the same on c
    concept_kl_b = Σ_c p^t_bc (log p^t_bc − log p^v_bc)

each averaged over the batch and weighted relative to the objective's fused term (defaults
5/3, 1/3 and 2/3): with a triplet objective of weight 1 the total is the official loss
divided by 3 and by the batch size. As everywhere in jitr, the
captions of one image in a batch are all positives (the official triplet takes only the
diagonal). ``T`` of a row is :func:`jitr.losses.triplet.triplet_per_query` against the
all-gathered batch.

Evaluation (``encode_images`` / ``encode_captions``) returns ``[f, c]``, the fused and
consensus embeddings side by side, and the model's ``eval_similarity`` of two
representations is the official ``w·(f_i·f_t) + (1 − w)·(c_i·c_t)`` (``i2t_sep_sim``,
``w = 0.95``; :func:`mixed_similarity`), in float32 on the devices and, for the official
protocol, in float64 on the host from the same float32 embeddings, as ``evalrank`` scores
them. ``encode_captions`` takes the captions' concept labels
(``None``: none): the official evaluation encodes each caption with the concepts it
mentions, completes its labels from its neighbours' (``complete_caption_labels``,
:mod:`!jitr.models.cvse.completion`) and encodes the captions again.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jitr.losses.triplet import triplet_per_query
from jitr.models.cvse.completion import DATASETS, complete_labels, completion_neighbours
from jitr.models.cvse.graph import THRESHOLD, concept_adjacency, normalized_adjacency
from jitr.models.cvse.model import CVSE, CVSEEmbeddings
from jitr.models.dual_encoder import dual_encoder
from jitr.models.retrieval_model import (
  INPUTS,
  ModelOutput,
  RetrievalModel,
  apply_collections,
  image_mask_of,
  require_constants,
)

CONCEPT_LABELS = "concept_labels"
"""The batch key of each row's concept labels ``[B, C]`` (its image's)."""

CONCEPTS = "concepts"
"""The name of the dataset constant CVSE's builder needs: a :class:`ConceptInputs`."""
CONCEPTS_NEEDED = "word vectors and co-occurrence statistics: ConceptInputs(...)"

AUX_TERMS = ("instance", "consensus", "concept_kl")


class ConceptInputs(NamedTuple):
  """A dataset's concept constants: the word vectors ``[C, D]``, the co-occurrence counts
  ``[C, C]`` and each concept's count ``[C]`` (the official ``*_adj_concepts.pkl``'s
  ``adj_all`` and ``nums``; :mod:`!jitr.data.concept_data` builds them from captions)."""

  vectors: np.ndarray
  co_occurrence: np.ndarray
  counts: np.ndarray


def concept_graph(concepts: ConceptInputs, threshold: float = THRESHOLD) -> np.ndarray:
  """The normalised adjacency ``Â`` [C, C] the GCN uses: ``gen_adj`` of ``gen_A_concept``'s
  ``adj_all`` (mode ``Complex``, threshold ``t``; :mod:`jitr.models.cvse.graph`)."""
  adjacency = concept_adjacency(concepts.co_occurrence, concepts.counts, threshold=threshold)
  return normalized_adjacency(adjacency)


def _gather(x: jax.Array, axis_name: str | None) -> jax.Array:
  return x if axis_name is None else jax.lax.all_gather(x, axis_name, tiled=True)


def row_triplets(
  images: jax.Array,
  captions: jax.Array,
  image_ids: jax.Array,
  valid: jax.Array,
  *,
  margin: float,
  mining: str,
  axis_name: str | None,
) -> jax.Array:
  """``[b]``: for each of this device's rows, the triplet of its image against every
  caption of the global batch plus that of its caption against every image."""
  all_images, all_captions = _gather(images, axis_name), _gather(captions, axis_name)
  all_ids, all_valid = _gather(image_ids, axis_name), _gather(valid, axis_name)
  positives = image_ids[:, None] == all_ids[None, :]
  where = jnp.broadcast_to(all_valid[None, :], positives.shape)
  i2t, _ = triplet_per_query(
    images @ all_captions.T, positives, where, margin=margin, mining=mining
  )
  t2i, _ = triplet_per_query(
    captions @ all_images.T, positives, where, margin=margin, mining=mining
  )
  return i2t + t2i


def concept_kl(text_scores: jax.Array, image_scores: jax.Array) -> jax.Array:
  """``[B]``: ``Σ_c p^t_c (log p^t_c − log p^v_c)`` (0 where ``p^t_c = 0``). A visual
  probability that underflowed to 0 is read as the smallest normal float (the official
  ``torch.log`` gives ``inf`` there), so the loss stays finite."""
  tiny = jnp.finfo(image_scores.dtype).tiny
  log_image = jnp.log(jnp.maximum(image_scores, tiny))
  return jnp.sum(jax.scipy.special.xlogy(text_scores, text_scores) - text_scores * log_image, -1)


def joint_representation(emb: CVSEEmbeddings) -> jax.Array:
  """``[f, c]`` [B, 2E]: the fused and the consensus embedding of each row, side by side."""
  return jnp.concatenate([emb.fused, emb.consensus], axis=-1)


def mixed_similarity(images: Any, captions: Any, fused_weight: float) -> Any:
  """``w·(F_v F_tᵀ) + (1−w)·(C_v C_tᵀ)`` [N_img, N_cap] of representations ``[f, c]``
  (:func:`joint_representation`): the official ``i2t_sep_sim`` score. Written with array
  operators alone, so it runs on JAX arrays (float32) and on numpy float64 arrays alike."""
  e = images.shape[-1] // 2
  fused = images[:, :e] @ captions[:, :e].T
  consensus = images[:, e:] @ captions[:, e:].T
  return fused_weight * fused + (1.0 - fused_weight) * consensus


@dataclasses.dataclass(frozen=True)
class CVSETerms:
  """CVSE's own loss terms and evaluation (the settings a model config gives
  :func:`cvse_model` rather than the module): the weights of its instance, consensus and
  concept-KL terms relative to the objective's fused term, the triplets' ``margin`` and
  ``mining``, the evaluation's fused weight ``w`` (:func:`mixed_similarity`) and
  ``label_completion``, the neighbour merge of the official evaluation (``"f30k"`` or
  ``"coco"``, :mod:`!jitr.models.cvse.completion`; ``None``: captions keep their labels)."""

  instance_weight: float = 5.0 / 3.0
  consensus_weight: float = 1.0 / 3.0
  kl_weight: float = 2.0 / 3.0
  margin: float = 0.2
  mining: str = "max"
  eval_fused_weight: float = 0.95
  label_completion: str | None = "f30k"

  def __post_init__(self):
    for name, w in self.weights().items():
      if w < 0:
        raise ValueError(f"cvse_model: {name}_weight must be >= 0, got {w}")
    if not 0.0 <= self.eval_fused_weight <= 1.0:
      raise ValueError(
        f"cvse_model: eval_fused_weight must be in [0, 1], got {self.eval_fused_weight}"
      )
    if self.label_completion is not None and self.label_completion not in DATASETS:
      raise ValueError(
        f"cvse_model: label_completion must be one of {sorted(DATASETS)} or None, "
        f"got {self.label_completion!r}"
      )

  def weights(self) -> dict[str, float]:
    """``{term: weight}`` of the auxiliary terms (:data:`AUX_TERMS`)."""
    return {
      "instance": self.instance_weight,
      "consensus": self.consensus_weight,
      "concept_kl": self.kl_weight,
    }


def cvse_model(
  module: CVSE, concept_vectors: np.ndarray, adjacency: np.ndarray, **settings: Any
) -> RetrievalModel:
  """A :class:`jitr.models.CVSE` as a dual encoder (module docstring). ``concept_vectors``
  ``[C, D]`` and the normalised ``adjacency`` ``[C, C]`` are the dataset's constants
  (:func:`!jitr.models.cvse.graph.normalized_adjacency`). The batch carries
  ``concept_labels [B, C]``. BatchNorms over the batch are synchronised over
  ``axis_name`` in training. ``settings``: the fields of
  :class:`!jitr.models.cvse.CVSETerms` (its loss terms' weights, ``margin``, ``mining``,
  ``eval_fused_weight``, ``label_completion``)."""
  terms = CVSETerms(**settings)
  weights, margin, mining = terms.weights(), terms.margin, terms.mining
  eval_fused_weight, label_completion = terms.eval_fused_weight, terms.label_completion
  vectors = np.asarray(concept_vectors, np.result_type(concept_vectors, np.float32))
  adj = np.asarray(adjacency, vectors.dtype)
  if vectors.ndim != 2 or adj.shape != (vectors.shape[0], vectors.shape[0]):
    raise ValueError(
      f"cvse_model: concept_vectors [C, D] and adjacency [C, C] expected, got "
      f"{vectors.shape} and {adj.shape}"
    )
  num_concepts = vectors.shape[0]
  embed_dim = module.embed_dim

  def labels_of(batch) -> jax.Array:
    labels = batch.get(CONCEPT_LABELS)
    if labels is None:
      raise ValueError(f"cvse_model: the batch has no {CONCEPT_LABELS!r} [B, {num_concepts}]")
    return jnp.asarray(labels)

  def init(rng, batch):
    args = (batch["images"], image_mask_of(batch), batch["tokens"], batch["lengths"])
    return dict(module.init(rng, *args, labels_of(batch), vectors, adj, False))

  def forward(variables, batch, *, train=True, rngs=None, axis_name=None):
    m = module.clone(axis_name=axis_name)
    args = (batch["images"], image_mask_of(batch), batch["tokens"], batch["lengths"])
    (img, txt), state = apply_collections(
      m,
      variables,
      *args,
      labels_of(batch),
      vectors,
      adj,
      train,
      train=train,
      rngs=rngs,
      method=None,
    )
    ids = batch["image_ids"]
    valid = batch.get("valid", jnp.ones(ids.shape, bool))
    triplets = dict(margin=margin, mining=mining, axis_name=axis_name)
    aux = {
      "instance": row_triplets(img.instance, txt.instance, ids, valid, **triplets),
      "consensus": row_triplets(img.consensus, txt.consensus, ids, valid, **triplets),
      "concept_kl": concept_kl(txt.concept_scores, img.concept_scores),
    }
    aux = {name: value for name, value in aux.items() if weights[name] > 0}
    return ModelOutput(img.fused, txt.fused, aux), state

  def encode_images(variables, images, image_mask):
    emb = module.apply(variables, images, image_mask, vectors, adj, method="embed_image")
    return joint_representation(emb)

  def encode_captions(variables, tokens, lengths, concept_labels=None):
    emb = module.apply(
      variables, tokens, lengths, concept_labels, vectors, adj, method="embed_text"
    )
    return joint_representation(emb)

  def eval_similarity(images, captions):
    return mixed_similarity(images, captions, eval_fused_weight)

  def complete_caption_labels(images, captions, labels):
    fused_images = np.asarray(images)[:, :embed_dim]
    fused_captions = np.asarray(captions)[:, :embed_dim]
    neighbours = completion_neighbours(fused_captions, fused_images, label_completion)
    return complete_labels(np.asarray(labels), neighbours)

  return dual_encoder(
    module,
    init,
    forward,
    encode_images=encode_images,
    encode_captions=encode_captions,
    aux_weights={name: float(w) for name, w in weights.items() if w > 0},
    complete_caption_labels=complete_caption_labels if label_completion else None,
    eval_similarity=eval_similarity,
    inputs=(*INPUTS, CONCEPT_LABELS),
  )


#: ``{setting: default}`` of :class:`CVSETerms`: the CVSE settings a model config gives
#: the builder rather than the module.
BUILDER_DEFAULTS: dict[str, Any] = {
  field.name: field.default for field in dataclasses.fields(CVSETerms)
}


def build(config: dict[str, Any], vocab_size: int, constants: Mapping[str, Any]) -> RetrievalModel:
  """The registry's builder: :class:`CVSE`'s fields, plus :class:`CVSETerms`' fields
  (``label_completion``: ``""`` for none) and ``concept_threshold``
  (the graph's ``t``, default 0.3); ``constants["concepts"]``: the dataset's
  :class:`ConceptInputs`."""
  require_constants("cvse", "CVSE", {CONCEPTS: CONCEPTS_NEEDED}, constants)
  concepts = constants[CONCEPTS]
  builder = {k: config.pop(k) for k in BUILDER_DEFAULTS if k in config}
  if builder.get("label_completion") == "":  # a config's way to say none
    builder["label_completion"] = None
  graph = concept_graph(concepts, config.pop("concept_threshold", THRESHOLD))
  module = CVSE(vocab_size=vocab_size, **config)
  return cvse_model(module, concepts.vectors, graph, **builder)
