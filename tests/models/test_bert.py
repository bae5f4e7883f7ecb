"""jitr.models.BertEncoder: Hugging Face ``BertModel`` parity on padded batches (float32 and
float64), padding invariance, gradients vs finite differences, dropout, bfloat16 compute and
per-layer remat."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jitr.models import BertConfig, BertEncoder
from tests.models.bert_reference import hf_hidden, hf_model, hf_params, jax_hidden, padded_batch
from tests.models.finite_differences import assert_directional_derivatives_match

pytest.importorskip("torch")
pytest.importorskip("transformers")

# bert-base's widths (hidden 768, 12 heads, intermediate 3072, its 30,522-word vocabulary);
# 2 layers instead of 12 keep the test fast, every layer being the same code.
BASE = BertConfig(
  vocab_size=30522,
  hidden_size=768,
  num_hidden_layers=2,
  num_attention_heads=12,
  intermediate_size=3072,
)
TINY = BertConfig(
  vocab_size=50,
  hidden_size=16,
  num_hidden_layers=2,
  num_attention_heads=4,
  intermediate_size=24,
  max_position_embeddings=12,
)


def _f64(params):
  return jax.tree.map(lambda a: np.asarray(a, np.float64), params)


def test_bert_base_sized_matches_transformers_on_a_padded_batch():
  model = hf_model(BASE)
  params = hf_params(model, BASE)
  ids, mask = padded_batch([16, 9, 4], 16, BASE.vocab_size, seed=1)
  types = np.random.default_rng(2).integers(0, 2, ids.shape)
  ours = jax_hidden(BASE, params, ids, mask, types)
  ref = hf_hidden(model, ids, mask, types)
  assert ours.dtype == np.float32 and ours.shape == (3, 16, 768)
  valid = mask.astype(bool)
  np.testing.assert_allclose(ours[valid], ref[valid], rtol=0, atol=1e-5)
  with jax.enable_x64(True):
    ours64 = jax_hidden(BASE, _f64(params), ids, mask, types, dtype=jnp.float64)
  ref64 = hf_hidden(model, ids, mask, types, double=True)
  assert ours64.dtype == np.float64
  # padded positions too: their queries attend to the valid keys only
  np.testing.assert_allclose(ours64, ref64, rtol=0, atol=1e-10)


@pytest.mark.parametrize("act", ["gelu", "gelu_new", "relu"])
def test_each_activation_matches_transformers_in_float64(act):
  config = BertConfig(**{**TINY.__dict__, "hidden_act": act})
  model = hf_model(config, seed=3)
  ids, mask = padded_batch([7, 3], 7, config.vocab_size, seed=4)
  with jax.enable_x64(True):
    ours = jax_hidden(config, _f64(hf_params(model, config)), ids, mask, dtype=jnp.float64)
  np.testing.assert_allclose(ours, hf_hidden(model, ids, mask, double=True), rtol=0, atol=1e-12)


def test_padding_never_changes_the_valid_outputs(make_params):
  ids, mask = padded_batch([5, 2], 12, TINY.vocab_size, seed=5, pad_noise=True)
  params = make_params(BertEncoder(TINY), ids, mask, scale=0.3)["params"]
  padded = jax_hidden(TINY, params, ids, mask)
  for b, n in enumerate((5, 2)):
    alone = jax_hidden(TINY, params, ids[b : b + 1, :n], mask[b : b + 1, :n])
    np.testing.assert_allclose(padded[b, :n], alone[0], rtol=0, atol=1e-6)


def _valid_sum_loss(config, ids, mask, weights):
  model = BertEncoder(config, dtype=jnp.float64)
  valid = mask.astype(bool)[..., None]
  return lambda p: jnp.sum(jnp.where(valid, weights * model.apply({"params": p}, ids, mask), 0))


def test_gradients_match_finite_differences_and_padding_gets_none(make_params):
  ids, mask = padded_batch([6, 3], 6, TINY.vocab_size, seed=6)
  ids[1, 3:] = [7, 8, 9]  # tokens only the padding holds
  params = make_params(BertEncoder(TINY), ids, mask, scale=0.3)["params"]
  weights = np.random.default_rng(7).normal(size=(2, 6, TINY.hidden_size))
  with jax.enable_x64(True):
    loss = _valid_sum_loss(TINY, ids, mask, weights)
    (grads,) = assert_directional_derivatives_match(loss, (_f64(params),))
  word = np.asarray(grads["embeddings"]["word_embeddings"]["embedding"])
  assert np.all(word[[7, 8, 9]] == 0) and np.any(word[ids[0]] != 0)


def test_dropout_only_when_training(make_params):
  ids, mask = padded_batch([8, 5], 8, TINY.vocab_size, seed=8)
  model = BertEncoder(TINY)
  params = make_params(model, ids, mask)["params"]
  run = jax.jit(
    lambda p, key, train: model.apply({"params": p}, ids, mask, train=train, rngs={"dropout": key}),
    static_argnums=2,
  )
  key = jax.random.key(0)
  evaluated, once, again = run(params, key, False), run(params, key, True), run(params, key, True)
  np.testing.assert_array_equal(once, again)
  assert np.abs(np.asarray(once) - np.asarray(evaluated)).max() > 1e-2
  other = run(params, jax.random.key(1), True)
  assert np.abs(np.asarray(other) - np.asarray(once)).max() > 1e-2
  quiet = BertConfig(**{**TINY.__dict__, "hidden_dropout_prob": 0.0})
  quiet = BertConfig(**{**quiet.__dict__, "attention_probs_dropout_prob": 0.0})
  trained = BertEncoder(quiet).apply({"params": params}, ids, mask, train=True)
  np.testing.assert_allclose(trained, evaluated, rtol=0, atol=1e-6)


def test_bfloat16_compute_is_close_and_remat_matches():
  config = BertConfig(**{**BASE.__dict__, "vocab_size": 1000})  # bert-base widths
  model = hf_model(config, seed=9)
  params = hf_params(model, config)
  ids, mask = padded_batch([12, 6], 12, config.vocab_size, seed=10)
  exact = jax_hidden(config, params, ids, mask)
  half = jax_hidden(config, params, ids, mask, dtype=jnp.bfloat16)
  assert half.dtype == np.float32
  shapes = jax.eval_shape(
    BertEncoder(config, dtype=jnp.bfloat16).init, jax.random.key(0), ids, mask
  )
  assert {a.dtype for a in jax.tree.leaves(shapes)} == {np.dtype(np.float32)}
  valid = mask.astype(bool)
  # bfloat16 keeps 8 significant bits (relative rounding 2^-9 ≈ 0.002) in every matmul
  # input; through 2 layers the LayerNorm-ed outputs (unit scale) moved by 0.010 at most,
  # 0.002 on average (measured).
  assert np.abs(half[valid] - exact[valid]).max() < 0.05
  assert np.abs(half[valid] - exact[valid]).mean() < 0.005
  weights = np.random.default_rng(11).normal(size=exact.shape).astype(np.float32)
  forward = lambda remat: jax.jit(
    jax.value_and_grad(
      lambda p: jnp.sum(weights * BertEncoder(config, remat=remat).apply({"params": p}, ids, mask))
    )
  )(params)
  (value, grads), (value_remat, grads_remat) = forward(False), forward(True)
  # the same float32 math up to XLA's fusion choices (summation order): a few ulps, and
  # noise ~1e-7 in the key biases' gradients, which are 0 in exact math (softmax is shift
  # invariant)
  np.testing.assert_allclose(value_remat, value, rtol=1e-6)
  remat_out = jax_hidden(config, params, ids, mask, remat=True)
  np.testing.assert_allclose(remat_out, exact, rtol=0, atol=1e-6)
  for g_remat, g in zip(jax.tree.leaves(grads_remat), jax.tree.leaves(grads), strict=True):
    np.testing.assert_allclose(g_remat, g, rtol=0, atol=1e-5 * np.abs(g).max() + 1e-6)


def test_longer_than_the_position_table_is_refused(make_params):
  ids, mask = padded_batch([13], 13, TINY.vocab_size)
  with pytest.raises(ValueError, match="length 13, expected at most max_position_embeddings = 12"):
    BertEncoder(TINY).init(jax.random.key(0), ids, mask)
