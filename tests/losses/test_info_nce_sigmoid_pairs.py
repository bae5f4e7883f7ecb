"""CLIP's InfoNCE and SigLIP's pairwise sigmoid: equal in value and gradient to open_clip's
``ClipLoss`` and ``SigLipLoss`` (their single-process ``forward``, transcribed below from
open_clip 3.3.0's ``loss.py`` in PyTorch), with the temperature and bias learned through
the scaled similarity; hand-computed cases for several positives and masked pairs."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jitr import losses

torch = pytest.importorskip("torch")
F = torch.nn.functional


@pytest.fixture(autouse=True)
def float64():
  """Every test in float64: the parity is then to rounding, not to float32."""
  with jax.enable_x64(True):
    yield


def clip_loss(image_features, text_features, logit_scale):
  """open_clip's ``ClipLoss.forward`` on one process (world_size 1, no bias)."""
  logits_per_image = logit_scale * image_features @ text_features.T
  logits_per_text = logit_scale * text_features @ image_features.T
  labels = torch.arange(logits_per_image.shape[0], dtype=torch.long)
  return (F.cross_entropy(logits_per_image, labels) + F.cross_entropy(logits_per_text, labels)) / 2


def siglip_loss(image_features, text_features, logit_scale, logit_bias):
  """open_clip's ``SigLipLoss._loss`` (world_size 1)."""
  logits = logit_scale * image_features @ text_features.T + logit_bias
  n = image_features.shape[0]
  labels = 2 * torch.eye(n, dtype=image_features.dtype) - torch.ones(
    (n, n), dtype=image_features.dtype
  )
  return -F.logsigmoid(labels * logits).sum() / image_features.shape[0]


def _features(n=6, d=8, seed=0):
  rng = np.random.default_rng(seed)
  img, txt = rng.normal(size=(n, d)), rng.normal(size=(n, d))
  img /= np.linalg.norm(img, axis=1, keepdims=True)
  txt /= np.linalg.norm(txt, axis=1, keepdims=True)
  return img, txt


@pytest.mark.parametrize("log_scale", [np.log(1 / 0.07), np.log(100.0)])
def test_info_nce_equals_open_clips_clip_loss_in_value_and_gradient(log_scale):
  img, txt = _features()

  def jitr_loss(i, t, s):
    return losses.info_nce(jnp.exp(s) * i @ t.T, logit_scale=1.0)

  value, grads = jax.value_and_grad(jitr_loss, argnums=(0, 1, 2))(img, txt, jnp.float64(log_scale))
  ti, tt = (torch.tensor(x, requires_grad=True) for x in (img, txt))
  ts = torch.tensor(log_scale, dtype=torch.float64, requires_grad=True)
  want = clip_loss(ti, tt, ts.exp())
  want.backward()
  np.testing.assert_allclose(value, want.item(), rtol=1e-12)
  for got, ref in zip(grads, (ti.grad, tt.grad, ts.grad)):
    np.testing.assert_allclose(got, ref.numpy(), rtol=1e-10, atol=1e-14)
  # the temperature as a hyper-parameter gives the same loss
  scale = float(np.exp(log_scale))
  np.testing.assert_allclose(losses.info_nce(img @ txt.T, logit_scale=scale), value, rtol=1e-12)


def test_sigmoid_pairs_equals_open_clips_siglip_loss_in_value_and_gradient():
  img, txt = _features(seed=1)

  def jitr_loss(i, t, s, b):
    return losses.sigmoid_pairs(jnp.exp(s) * i @ t.T + b, logit_scale=1.0, logit_bias=0.0)

  args = (img, txt, jnp.float64(np.log(10.0)), jnp.float64(-10.0))
  value, grads = jax.value_and_grad(jitr_loss, argnums=(0, 1, 2, 3))(*args)
  ti, tt = (torch.tensor(x, requires_grad=True) for x in (img, txt))
  ts = torch.tensor(np.log(10.0), dtype=torch.float64, requires_grad=True)
  tb = torch.tensor(-10.0, dtype=torch.float64, requires_grad=True)
  want = siglip_loss(ti, tt, ts.exp(), tb)
  want.backward()
  np.testing.assert_allclose(value, want.item(), rtol=1e-12)
  for got, ref in zip(grads, (ti.grad, tt.grad, ts.grad, tb.grad)):
    np.testing.assert_allclose(got, ref.numpy(), rtol=1e-10, atol=1e-14)
  hyper = losses.sigmoid_pairs(img @ txt.T, logit_scale=10.0, logit_bias=-10.0)
  np.testing.assert_allclose(hyper, value, rtol=1e-12)


def test_several_positives_are_one_class_and_padding_is_ignored():
  """Image 0 has captions 0 and 1; caption 2 belongs to image 1; the last pair is padding.
  InfoNCE of image 0: −log((e^{s00} + e^{s01}) / Σ_j e^{s0j}); caption 1's query has image 0
  as its one positive."""
  sim = np.array([[0.9, 0.5, 0.1, 0.3], [0.2, 0.4, 0.8, 0.0]])
  pos = np.array([[True, True, False, False], [False, False, True, False]])
  where = np.array([[True, True, True, False], [True, True, True, False]])
  per = losses.info_nce(sim, positives=pos, where=where, logit_scale=2.0, reduction="none")
  z = 2.0 * sim[:, :3]
  lse = np.log(np.exp(z).sum(axis=1))
  want_i2t = [lse[0] - np.log(np.exp(z[0, :2]).sum()), lse[1] - z[1, 2]]
  np.testing.assert_allclose(per.image_to_text, want_i2t, rtol=1e-12)
  zt = z.T
  want_t2i = [np.log(np.exp(zt[j]).sum()) - zt[j, owner] for j, owner in enumerate((0, 0, 1))]
  np.testing.assert_allclose(per.text_to_image[:3], want_t2i, rtol=1e-12)
  np.testing.assert_array_equal(per.text_weight, [1, 1, 1, 0])  # the padded caption: no query
  mean = losses.info_nce(sim, positives=pos, where=where, logit_scale=2.0)
  np.testing.assert_allclose(mean, (np.mean(want_i2t) + np.mean(want_t2i)) / 2, rtol=1e-12)
  # SigLIP: every valid pair once, through the image rows, the mean over the images
  labels = np.where(pos, 1.0, -1.0)
  pairs = np.log1p(np.exp(-labels * (3.0 * sim - 1.0)))
  got = losses.sigmoid_pairs(sim, positives=pos, where=where, logit_scale=3.0, logit_bias=-1.0)
  np.testing.assert_allclose(got, pairs[where].sum() / 2, rtol=1e-12)


def test_they_combine_with_the_other_terms_in_an_objective():
  sim = jnp.asarray(np.random.default_rng(2).normal(size=(5, 5)))
  relevance = jnp.eye(5) + 0.1
  fn = losses.objective(
    {
      "info_nce": {"weight": 1.0, "logit_scale": 20.0},
      "sigmoid_pairs": {"weight": 0.5},
      "smooth_ndcg": {"weight": 1.0},
    }
  )
  total, parts = fn(sim, graded=relevance)
  assert parts["info_nce"] == pytest.approx(float(losses.info_nce(sim, logit_scale=20.0)))
  assert parts["sigmoid_pairs"] == pytest.approx(float(losses.sigmoid_pairs(sim)))
  want = parts["info_nce"] + 0.5 * parts["sigmoid_pairs"] + parts["smooth_ndcg"]
  assert total == pytest.approx(float(want))
  with pytest.raises(ValueError, match="logit_scale"):
    losses.objective({"info_nce": {"weight": 1.0, "logit_scale": 0.0}})
