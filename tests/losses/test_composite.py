import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jitr import losses
from jitr.losses import query_rows
from jitr.losses.smooth_ndcg import smooth_ndcg_queries
from tests.losses.conftest import make_batch


def _batch():
  sim, pos, where, relevance, metric = make_batch(2, n_img=4, captions_per_image=2)
  return jnp.asarray(sim), jnp.asarray(pos), jnp.asarray(relevance), jnp.asarray(metric)


def test_weighted_sum_and_terms():
  sim, pos, relevance, _ = _batch()
  loss_fn = losses.objective(
    {"triplet": {"weight": 1.0, "margin": 0.1}, "smooth_ndcg": {"weight": 0.5, "temperature": 0.1}}
  )
  total, parts = jax.jit(lambda s, r: loss_fn(s, positives=pos, graded=r))(sim, relevance)
  t = losses.triplet(sim, positives=pos, margin=0.1)
  n = losses.smooth_ndcg(sim, relevance, positives=pos, temperature=0.1)
  assert float(parts["triplet"]) == pytest.approx(float(t), abs=1e-6)
  assert float(parts["smooth_ndcg"]) == pytest.approx(float(n), abs=1e-6)
  assert float(total) == pytest.approx(float(t) + 0.5 * float(n), abs=1e-6)


def test_config_dict_named_inputs_and_repeated_loss():
  ml_collections = pytest.importorskip("ml_collections")  # the train extra's (configs)
  sim, pos, relevance, metric = _batch()
  config = ml_collections.ConfigDict(
    {
      "sam": {
        "loss": "semantic_margin_triplet",
        "weight": 2.0,
        "input": "cider",
        "sampling": "random",
      },
      "lseh": {"loss": "semantic_hard_negatives", "input": "lsa"},
      "lmh": {"loss": "triplet"},
      "lsh": {"loss": "triplet", "mining": "sum", "weight": 0.1},
      "adaptive_listwise": {},
    }
  )
  objective = jax.jit(losses.objective(config))  # one compilation instead of op by op
  total, parts = objective(
    sim, positives=pos, graded={"cider": metric, "lsa": relevance}, key=jax.random.key(0)
  )
  assert set(parts) == {"sam", "lseh", "lmh", "lsh", "adaptive_listwise"}
  assert float(parts["lseh"]) == pytest.approx(
    float(losses.semantic_hard_negatives(sim, relevance, positives=pos)), abs=1e-6
  )
  assert float(total) == pytest.approx(
    2 * float(parts["sam"])
    + float(parts["lseh"])
    + float(parts["lmh"])
    + 0.1 * float(parts["lsh"])
    + float(parts["adaptive_listwise"]),
    abs=1e-5,
  )


def test_bad_configs_raise_clear_errors():
  sim, pos, _, _ = _batch()
  with pytest.raises(ValueError, match="unknown loss 'ndcg'"):
    losses.objective({"ndcg": {}})
  with pytest.raises(ValueError, match="at least one"):
    losses.objective({})
  with pytest.raises(ValueError, match="needs graded"):
    losses.objective({"smooth_ndcg": {}})(sim, positives=pos)
  with pytest.raises(ValueError, match="no 'relevance'"):
    losses.objective({"smooth_ndcg": {}})(sim, positives=pos, graded={"cider": sim})


def test_epoch_windows_switch_terms_at_the_step():
  """VSE∞ warm-up: sum-of-hinges for epoch 0, max-violation from epoch 1 (10 steps/epoch)."""
  sim, pos, _, _ = _batch()
  loss_fn = losses.objective(
    {
      "warmup": {"loss": "triplet", "mining": "sum", "until_epoch": 1},
      "triplet": {"mining": "max", "from_epoch": 1},
    },
    steps_per_epoch=10,
  )
  lsh = float(losses.triplet(sim, positives=pos, mining="sum"))
  lmh = float(losses.triplet(sim, positives=pos, mining="max"))
  assert lsh != pytest.approx(lmh)
  run = jax.jit(lambda s, step: loss_fn(s, positives=pos, step=step))
  for step, expected in ((0, lsh), (9, lsh), (10, lmh), (1000, lmh)):
    total, parts = run(sim, step)
    assert float(total) == pytest.approx(expected, abs=1e-6)
    assert float(parts["warmup"]) == pytest.approx(lsh, abs=1e-6)  # parts: unweighted, always
  grad = jax.jit(jax.grad(lambda s: loss_fn(s, positives=pos, step=3)[0]))(sim)
  ref = jax.jit(jax.grad(lambda s: losses.triplet(s, positives=pos, mining="sum")))(sim)
  np.testing.assert_allclose(grad, ref, atol=1e-7)


def test_epoch_window_errors():
  sim, pos, _, _ = _batch()
  with pytest.raises(ValueError, match="steps_per_epoch"):
    losses.objective({"triplet": {"until_epoch": 1}})
  with pytest.raises(ValueError, match="must be before"):
    losses.objective({"triplet": {"from_epoch": 2, "until_epoch": 1}}, steps_per_epoch=5)
  with pytest.raises(ValueError, match="pass step="):
    losses.objective({"triplet": {"from_epoch": 1}}, steps_per_epoch=5)(sim, positives=pos)


def test_registry_carries_the_per_query_core_graded_kind_and_key_need():
  assert {name for name, spec in losses.LOSSES.items() if spec.needs_key} == {
    "semantic_margin_triplet"
  }
  assert {name: spec.graded for name, spec in losses.LOSSES.items()} == {
    "triplet": None,
    "smooth_ndcg": "relevance",
    "adaptive_listwise": None,
    "semantic_margin_triplet": "metric",
    "semantic_hard_negatives": "semantic",
    "info_nce": None,
    "sigmoid_pairs": None,
  }
  spec = losses.LOSSES["smooth_ndcg"]
  assert spec.fn is losses.smooth_ndcg and spec.per_query is smooth_ndcg_queries


def test_partial_sums_of_query_blocks_add_up_to_the_whole_objective():
  """The split contract without devices: uneven blocks of query rows, summed, then combined."""
  sim, pos, where, relevance, metric = make_batch(3, n_img=5, captions_per_image=1, pad_img=1)
  sim, pos, where = jnp.asarray(sim)[:, :6], jnp.asarray(pos)[:, :6], jnp.asarray(where)[:, :6]
  graded = {"relevance": jnp.asarray(relevance)[:, :6], "metric": jnp.asarray(metric)[:, :6]}
  loss_fn = losses.objective(
    {
      "lsh": {"loss": "triplet", "mining": "sum", "reduction": "sum"},
      "smooth_ndcg": {"temperature": 0.1},
      "cmal2r": {"loss": "adaptive_listwise"},
      "sam": {"loss": "semantic_margin_triplet", "input": "metric", "sampling": "random"},
    }
  )
  key = jax.random.key(4)

  def whole(s):
    return loss_fn(s, positives=pos, where=where, graded=graded, key=key)[0]

  def by_blocks(s):
    inputs = loss_fn.graded_inputs(graded)
    i2t, t2i = query_rows.directions(s, pos, where)
    sums = None
    for block in (slice(0, 1), slice(1, 6)):  # uneven: a lone row, then five
      pick = lambda r, g, block=block: r._replace(
        sim=r.sim[block],
        positives=r.positives[block],
        where=r.where[block],
        graded=None if g is None else g[block],
        index=r.index[block],
      )
      rows = {n: (pick(i2t, m), pick(t2i, None if m is None else m.T)) for n, m in inputs.items()}
      part = loss_fn.partial_sums(rows, key=key)
      sums = part if sums is None else jax.tree.map(jnp.add, sums, part)
    return loss_fn.combine(sums)[0]

  # One compilation each (op-by-op, the eager gradients took minutes on 2 cores).
  got, got_grad = jax.jit(jax.value_and_grad(by_blocks))(sim)
  want, want_grad = jax.jit(jax.value_and_grad(whole))(sim)
  assert float(got) == pytest.approx(float(want), rel=1e-6)
  np.testing.assert_allclose(got_grad, want_grad, atol=1e-6)
  assert np.abs(np.asarray(want_grad)).max() > 1e-3  # a real gradient


def test_a_learned_logit_scale_is_taken_per_call_with_its_gradient():
  from jitr.losses import info_nce
  from jitr.losses.composite import check_terms, objective

  sim = jnp.asarray(np.random.default_rng(0).uniform(-1, 1, (4, 4)), jnp.float32)
  loss_fn = objective({"clip": {"loss": "info_nce", "logit_scale": "learned"}})
  assert loss_fn.learned == ("logit_scale",)
  total, _ = loss_fn(sim, learned={"logit_scale": jnp.float32(20.0)})
  np.testing.assert_allclose(float(total), float(info_nce(sim, logit_scale=20.0)), rtol=1e-6)
  grad = jax.grad(lambda t: loss_fn(sim, learned={"logit_scale": t})[0])(jnp.float32(20.0))
  want = jax.grad(lambda t: info_nce(sim, logit_scale=t))(jnp.float32(20.0))
  np.testing.assert_allclose(float(grad), float(want), rtol=1e-5)
  with pytest.raises(ValueError, match="logit_scale='learned' needs a model that learns"):
    loss_fn(sim)
  check_terms({"clip": {"loss": "info_nce", "logit_scale": "learned"}})  # passes
  with pytest.raises(ValueError, match="info_nce has no hyper-parameter 'margin'"):
    objective({"clip": {"loss": "info_nce", "margin": "learned"}})
