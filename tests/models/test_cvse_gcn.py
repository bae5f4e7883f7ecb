"""CVSE's concept GCN against a PyTorch reference transcribed from the official
``util/C_GCN.py`` (``GraphConvolution`` in ``whole_graph`` mode, ``C_GCN.forward``), on the
real F30K adjacency and random word vectors; initialisation bounds; gradients against
float64 finite differences."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jitr.models.cvse import graph as cvse_graph
from jitr.models.cvse.gcn import ConceptGCN

torch = pytest.importorskip("torch")


def reference_c_gcn(inp, adj_all, w1, w2):
  """``C_GCN.forward(feature, inp)`` with ``gc1.weight = w1``, ``gc2.weight = w2`` (torch)."""
  import torch.nn as nn

  def gen_adj(a):  # util_C_GCN.gen_adj
    d = torch.pow(a.sum(1).float(), -0.5)
    d = torch.diag(d)
    return torch.matmul(torch.matmul(a, d).t(), d)

  def l2norm(x, dim=-1, eps=1e-12):  # C_GCN.l2norm
    norm = torch.pow(x, 2).sum(dim=dim, keepdim=True).sqrt() + eps
    return torch.div(x, norm)

  adj = gen_adj(adj_all).detach()
  x = torch.matmul(adj, torch.matmul(inp, w1))  # gc1, whole_graph, no bias
  x = nn.LeakyReLU(0.2)(x)
  x = torch.matmul(adj, torch.matmul(x, w2))  # gc2
  return l2norm(x)


def _graph(c=12, seed=0):
  rng = np.random.default_rng(seed)
  co = rng.integers(0, 30, (c, c))
  co = np.triu(co, 1) + np.triu(co, 1).T
  counts = co.max(1) + rng.integers(1, 20, c)
  return cvse_graph.concept_adjacency(co, counts, key="adj_all")  # Complex mode, t = 0.3


def test_matches_the_official_forward():
  adj_all = _graph()
  rng = np.random.default_rng(1)
  vectors = rng.normal(size=(12, 10)).astype(np.float32)
  model = ConceptGCN(embed_dim=8)
  params = model.init(jax.random.key(0), vectors, jnp.eye(12))["params"]
  got = model.apply(
    {"params": params}, vectors, cvse_graph.normalized_adjacency(adj_all).astype(np.float32)
  )
  want = reference_c_gcn(
    torch.from_numpy(vectors),
    torch.from_numpy(adj_all.astype(np.float32)),  # the official float32 Parameter
    torch.from_numpy(np.array(params["gc1_weight"])),  # a copy: torch takes writable arrays
    torch.from_numpy(np.array(params["gc2_weight"])),
  ).numpy()
  np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-6)
  np.testing.assert_allclose(np.linalg.norm(np.asarray(got), axis=1), 1.0, rtol=1e-6)


def test_weights_start_in_the_official_bounds():
  params = ConceptGCN(embed_dim=64).init(jax.random.key(3), jnp.ones((5, 300)), jnp.eye(5))
  w1, w2 = params["params"]["gc1_weight"], params["params"]["gc2_weight"]
  assert w1.shape == (300, 32) and w2.shape == (32, 64)
  for w in (w1, w2):
    bound = 1.0 / np.sqrt(w.shape[1])
    assert float(jnp.abs(w).max()) <= bound and float(jnp.abs(w).max()) > 0.9 * bound


def test_gradients_match_float64_finite_differences():
  with jax.enable_x64(True):
    adj = jnp.asarray(cvse_graph.normalized_adjacency(_graph(c=6)))
    vectors = jnp.asarray(np.random.default_rng(2).normal(size=(6, 4)))
    model = ConceptGCN(embed_dim=4)
    params = model.init(jax.random.key(0), vectors, adj)["params"]
    params = jax.tree.map(lambda p: p.astype(jnp.float64), params)
    target = jnp.asarray(np.random.default_rng(3).normal(size=(6, 4)))

    def loss(p):
      return jnp.sum(model.apply({"params": p}, vectors, adj) * target)

    grad = jax.grad(loss)(params)
    eps = 1e-6
    for name in ("gc1_weight", "gc2_weight"):
      for index in [(0, 0), (1, 1), (1, 0)]:  # within both [4, 2] and [2, 4]
        bump = jnp.zeros_like(params[name]).at[index].set(eps)
        up = loss({**params, name: params[name] + bump})
        down = loss({**params, name: params[name] - bump})
        assert float(grad[name][index]) == pytest.approx(float(up - down) / (2 * eps), rel=1e-6)


def test_an_odd_embedding_width_is_refused():
  with pytest.raises(ValueError, match="ConceptGCN.embed_dim: expected an even number >= 2"):
    ConceptGCN(embed_dim=7).init(jax.random.key(0), jnp.ones((3, 4)), jnp.eye(3))
