"""Masked GRU layers against a numpy reference of PyTorch's GRU equations."""

import jax
import jax.numpy as jnp
import numpy as np

from jitr.models import gru


def _sigmoid(x):
  return 1 / (1 + np.exp(-x))


def numpy_gru(x, length, w_i, b_i, w_h, b_h):
  """h' = (1-z) n + z h with r, z, n as in torch.nn.GRU, over x[:length]."""
  h = np.zeros(w_h.shape[0])
  outs = []
  for t in range(length):
    xp, hp = x[t] @ w_i + b_i, h @ w_h + b_h
    xr, xz, xn = np.split(xp, 3)
    hr, hz, hn = np.split(hp, 3)
    r, z = _sigmoid(xr + hr), _sigmoid(xz + hz)
    n = np.tanh(xn + r * hn)
    h = (1 - z) * n + z * h
    outs.append(h)
  return np.array(outs), h


def _setup(make_params, reverse=False):
  b, t, e, h = 3, 6, 4, 5
  x = jax.random.normal(jax.random.key(0), (b, t, e))
  lengths = jnp.array([6, 3, 1])
  layer = gru.GRU(h, reverse=reverse)
  # random (non-zero) weights and biases, so bias placement is tested too
  return layer, make_params(layer, x, lengths), x, lengths


def _np_params(p):
  q = jax.tree.map(np.asarray, p["params"])
  return q["input"]["kernel"], q["input"]["bias"], q["recurrent_kernel"], q["recurrent_bias"]


def test_forward_matches_numpy_reference(make_params):
  layer, p, x, lengths = _setup(make_params)
  outs, final = jax.jit(layer.apply)(p, x, lengths)
  assert outs.shape == (3, 6, 5) and final.shape == (3, 5)
  for i, n in enumerate(np.asarray(lengths)):
    ref_out, ref_h = numpy_gru(np.asarray(x[i]), n, *_np_params(p))
    np.testing.assert_allclose(outs[i, :n], ref_out, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(outs[i, n:], 0.0)
    np.testing.assert_allclose(final[i], ref_h, rtol=1e-5, atol=1e-5)


def test_reverse_reads_each_sequence_backwards_within_its_length(make_params):
  layer, p, x, lengths = _setup(make_params, reverse=True)
  outs, final = jax.jit(layer.apply)(p, x, lengths)
  for i, n in enumerate(np.asarray(lengths)):
    ref_out, ref_h = numpy_gru(np.asarray(x[i, :n][::-1]), n, *_np_params(p))
    np.testing.assert_allclose(outs[i, :n], ref_out[::-1], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(final[i], ref_h, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(outs[i, n:], 0.0)


def test_padding_never_matters_and_trimming_is_exact(make_params):
  for layer_cls in (gru.GRU, gru.BiGRU):
    layer = layer_cls(4)
    x = jax.random.normal(jax.random.key(0), (2, 7, 3))
    lengths = jnp.array([4, 2])
    p = make_params(layer, x, lengths)
    mask = (jnp.arange(7)[None, :] < lengths[:, None])[..., None]
    x2 = jnp.where(mask, x, 100.0 * jax.random.normal(jax.random.key(5), x.shape))
    (o1, f1), (o2, f2), (o3, f3) = jax.jit(
      lambda p: (  # noqa: B023
        layer.apply(p, x, lengths),
        layer.apply(p, x2, lengths),
        layer.apply(p, x[:, :4], lengths),
      )
    )(p)  # last: trimmed to the longest
    np.testing.assert_allclose(f1, f2, atol=1e-6)
    np.testing.assert_allclose(o1, o2, atol=1e-6)
    np.testing.assert_allclose(f1, f3, atol=1e-6)
    np.testing.assert_allclose(o1[:, :4], o3, atol=1e-6)


def test_bigru_mean_and_concat(make_params):
  x = jax.random.normal(jax.random.key(0), (2, 5, 3))
  lengths = jnp.array([5, 3])
  mean = gru.BiGRU(4, merge="mean")
  p = make_params(mean, x, lengths)
  (om, fm), (oc, fc) = jax.jit(
    lambda p: (mean.apply(p, x, lengths), gru.BiGRU(4, merge="concat").apply(p, x, lengths))
  )(p)
  assert om.shape == (2, 5, 4) and oc.shape == (2, 5, 8)
  np.testing.assert_allclose(om, (oc[..., :4] + oc[..., 4:]) / 2, atol=1e-6)
  np.testing.assert_allclose(fm, (fc[..., :4] + fc[..., 4:]) / 2, atol=1e-6)


def test_reverse_padded_hand_case():
  x = jnp.array([[1, 2, 3, 9], [4, 5, 9, 9]])
  np.testing.assert_array_equal(
    gru.reverse_padded(x, jnp.array([3, 2])), [[3, 2, 1, 9], [5, 4, 9, 9]]
  )
