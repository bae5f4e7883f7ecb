"""CVSE's consensus-level concept GCN (official ``util/C_GCN.py``: ``C_GCN``).

Two graph convolutions without bias over the ``C`` concepts (``GraphConvolution`` in its
``whole_graph`` mode), a LeakyReLU(0.2) between them, and an l2 normalisation::

    h = LeakyReLU_0.2(Â · (X · W1))        W1: [D, E // 2]
    concepts = l2norm(Â · (h · W2))        W2: [E // 2, E]

``X`` [C, D] are the concepts' word vectors and ``Â`` [C, C] the normalised adjacency
(:func:`!jitr.models.cvse.graph.normalized_adjacency` of the processed ``adj_all``; the
official forward recomputes it from the stored matrix and detaches it: a constant here).
``l2norm`` is the official ``x / (sqrt(Σ x²) + 1e-12)``. The output depends on neither
image nor caption, so one call serves a whole step.

The weights start as the official ``reset_parameters`` draws them: uniform in
``±1 / sqrt(out_features)``. The official ``__init__`` also declares ``joint_att_emb`` (a
Linear ``E -> E``) that its forward never calls: it has no counterpart here (a state
dict's ``joint_att_emb.*`` entries carry nothing the output depends on).
"""

from __future__ import annotations

import math

import flax.linen as nn
import jax
import jax.numpy as jnp

from jitr.losses.normalize import l2_normalize_additive

LEAKY_SLOPE = 0.2
L2NORM_EPS = 1e-12


def official_gcn_init(key: jax.Array, shape, dtype=jnp.float32) -> jax.Array:
  """``GraphConvolution.reset_parameters``: uniform in ``±1 / sqrt(shape[1])``."""
  bound = 1.0 / math.sqrt(shape[1])
  return jax.random.uniform(key, shape, dtype, -bound, bound)


def graph_convolution(x: jax.Array, adjacency: jax.Array, weight: jax.Array) -> jax.Array:
  """``Â · (X · W)``: the official ``GraphConvolution`` (``whole_graph``, no bias)."""
  return adjacency @ (x @ weight)


class ConceptGCN(nn.Module):
  """``(concept_vectors [C, D], adjacency [C, C]) -> concept features [C, embed_dim]``,
  l2-normalised rows (the module docstring's formula)."""

  embed_dim: int = 1024

  @nn.compact
  def __call__(self, concept_vectors: jax.Array, adjacency: jax.Array) -> jax.Array:
    if self.embed_dim < 2 or self.embed_dim % 2:
      raise ValueError(f"ConceptGCN.embed_dim: expected an even number >= 2, got {self.embed_dim}")
    hidden = self.embed_dim // 2
    w1 = self.param("gc1_weight", official_gcn_init, (concept_vectors.shape[-1], hidden))
    w2 = self.param("gc2_weight", official_gcn_init, (hidden, self.embed_dim))
    x = nn.leaky_relu(graph_convolution(concept_vectors, adjacency, w1), LEAKY_SLOPE)
    x = graph_convolution(x, adjacency, w2)
    return l2_normalize_additive(x, axis=-1, eps=L2NORM_EPS)
