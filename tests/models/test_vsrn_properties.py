"""VSRN invariances: padding regions / words never changes an output, the batch order only
permutes the outputs, each ``Rs_GCN`` starts as the identity, float64 gradients."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import random_params
from finite_differences import assert_directional_derivatives_match

from jitr.models.vsrn.model import VSRN, VSRNImageEncoder, region_l2norm, vsrn_dataset_options

VOCAB, B, N, T = 13, 4, 5, 6
TINY = dict(vocab_size=VOCAB, word_dim=4, embed_dim=6, caption_hidden_dim=5, caption_word_dim=3)


def model(dataset="coco", **kw):
  return VSRN(**TINY, **vsrn_dataset_options(dataset), caption_dropout=0.0, **kw)


def batch(seed=0, n=N, t=T, dtype=np.float32):
  rng = np.random.default_rng(seed)
  images = rng.normal(size=(B, n, 7)).astype(dtype)
  counts = np.array([5, 2, 4, 3])
  mask = np.arange(n)[None] < counts[:, None]
  tokens = rng.integers(1, VOCAB, size=(B, t))
  lengths = np.array([6, 2, 4, 5])
  return images, mask, tokens, lengths


def variables(m, seed=0, dtype=np.float32):
  images, mask, tokens, lengths = batch()
  v = random_params(m, images, mask, tokens, lengths, tokens, lengths, seed=seed)
  v = jax.tree.map(lambda a: np.asarray(a, dtype), v)
  v["batch_stats"] = jax.tree_util.tree_map_with_path(  # running variances must be > 0
    lambda path, a: np.abs(a) + 0.5 if path[-1].key == "var" else a, v["batch_stats"]
  )
  return v


@functools.cache
def compiled_forward(dataset, train):
  """One jitted forward per (dataset, mode), shared by the tests that run it."""
  m = model(dataset)

  @jax.jit
  def run(v, images, mask, tokens, lengths):
    (img, regions, mask_out), upd = m.apply(
      v, images, mask, train, method=m.encode_image, mutable=["batch_stats"]
    )
    txt = m.apply(v, tokens, lengths, method=m.encode_text)
    ll = m.apply(v, regions, mask_out, tokens, lengths, train, method=m.caption_log_likelihood)
    return img, regions, txt, ll, upd["batch_stats"]

  return run


def forward(dataset, v, images, mask, tokens, lengths, train):
  run = compiled_forward(dataset, train)
  return jax.tree.map(np.asarray, run(v, images, mask, tokens, lengths))


def pad(images, mask, tokens, lengths, seed=9):
  """Two more region slots and two more word slots, filled with garbage, and garbage in
  every existing padded slot."""
  rng = np.random.default_rng(seed)
  big = rng.normal(size=(B, N + 2, images.shape[2])).astype(images.dtype) * 50
  big_mask = np.concatenate([mask, np.zeros((B, 2), bool)], axis=1)
  big[big_mask] = images[mask]
  toks = rng.integers(0, VOCAB, size=(B, T + 2))
  keep = np.arange(T)[None] < lengths[:, None]
  toks[:, :T][keep] = tokens[keep]
  return big, big_mask, toks, lengths


# Train mode (masked batch statistics) for both datasets. Eval mode differs only in the
# BatchNorms using their running statistics, a fixed affine map per region or per image,
# and is checked once: COCO (F30K's extra BatchNorm of the GRU state is then an affine map
# of an already padding-free state; dropout is 0 in both modes).
@pytest.mark.parametrize("dataset,train", [("coco", True), ("f30k", True), ("coco", False)])
def test_padding_regions_or_words_never_changes_an_output(dataset, train):
  v = variables(model(dataset))
  args = batch()
  small = forward(dataset, v, *args, train)
  big = forward(dataset, v, *pad(*args), train)
  for i in (0, 2, 3):  # img, txt, caption log-likelihood
    np.testing.assert_allclose(big[i], small[i], atol=2e-6, rtol=1e-5)
  np.testing.assert_allclose(big[1][:, :N], small[1], atol=2e-6, rtol=1e-5)
  assert np.all(big[1][~pad(*args)[1]] == 0), "padded regions come out 0"
  jax.tree.map(
    lambda a, b: np.testing.assert_allclose(a, b, atol=2e-6, rtol=1e-5), big[4], small[4]
  )


def test_eval_image_embedding_is_the_images_own_unpadded_embedding():
  """In eval mode an image's outputs do not depend on the rest of the batch or on its
  padding: image b with n_b valid regions equals image b alone, cut to n_b regions."""
  m = model()
  v = variables(m)
  images, mask, tokens, lengths = batch()
  img, regions, *_ = forward("coco", v, images, mask, tokens, lengths, False)
  encode = jax.jit(lambda v, x: m.apply(v, x, method=m.encode_image))
  for b in (1, 3):
    n_b = int(mask[b].sum())
    alone = encode(v, images[b : b + 1, :n_b])
    np.testing.assert_allclose(img[b], alone[0][0], atol=2e-6, rtol=1e-5)
    np.testing.assert_allclose(regions[b, :n_b], alone[1][0], atol=2e-6, rtol=1e-5)


@pytest.mark.parametrize("dataset", ["coco", "f30k"])
def test_permuting_the_batch_permutes_every_output(dataset):
  """Train mode: the BatchNorm moments are symmetric in the batch, so a permutation of
  the (image, caption) rows permutes the outputs and leaves the running statistics."""
  v = variables(model(dataset))
  args = batch(seed=3)
  perm = np.array([2, 0, 3, 1])
  base = forward(dataset, v, *args, True)  # the padding test's compiled forward
  permuted = forward(dataset, v, *(a[perm] for a in args), True)
  for i in range(4):
    np.testing.assert_allclose(permuted[i], base[i][perm], atol=2e-6, rtol=1e-5)
  jax.tree.map(
    lambda a, b: np.testing.assert_allclose(a, b, atol=2e-6, rtol=1e-5), permuted[4], base[4]
  )


def test_each_rs_gcn_layer_starts_as_the_identity():
  """With the official init (BatchNorm γ = β = 0) four GCN layers change nothing: the
  embedding equals that of an encoder with no GCN layer and the same other weights."""
  enc, enc0 = VSRNImageEncoder(embed_dim=6), VSRNImageEncoder(embed_dim=6, gcn_layers=0)
  images, mask, _, _ = batch()
  v = jax.jit(enc.init)(jax.random.key(1), images, mask)
  gcn = {k for k in v["params"] if k.startswith("Rs_GCN_")}
  assert gcn == {"Rs_GCN_1", "Rs_GCN_2", "Rs_GCN_3", "Rs_GCN_4"}
  v0 = {"params": {k: p for k, p in v["params"].items() if k not in gcn}}
  encode = jax.jit(
    lambda v, v0: (
      enc0.apply(v0, images, mask, True),
      enc.apply(v, images, mask, True, mutable=["batch_stats"])[0],
      enc.apply(v, images, mask),
    )
  )
  want, *gots = encode(v, v0)
  for got in gots:  # train (batch statistics) and eval (running statistics)
    np.testing.assert_allclose(got[0], want[0], atol=1e-6)
    np.testing.assert_allclose(got[1], want[1], atol=1e-6)


def test_region_l2norm_by_hand():
  x = jnp.array([[[3.0, 0.0], [4.0, 1.0], [7.0, 7.0]]])  # [1, 3 regions, 2 features]
  mask = jnp.array([[True, True, False]])
  np.testing.assert_allclose(
    region_l2norm(x, mask, "regions"), [[[0.6, 0.0], [0.8, 1.0], [0.0, 0.0]]], rtol=1e-6
  )
  np.testing.assert_allclose(
    region_l2norm(x, mask, "features"),
    [[[1.0, 0.0], [4 / 17**0.5, 1 / 17**0.5], [0.0, 0.0]]],
    rtol=1e-6,
  )


def test_bad_options_are_named():
  with pytest.raises(ValueError, match="region_l2norm_axis must be one of .*got 'rows'"):
    region_l2norm(jnp.ones((1, 2, 2)), jnp.ones((1, 2), bool), "rows")
  with pytest.raises(ValueError, match="dataset must be one of \\('coco', 'f30k'\\), got 'f8k'"):
    vsrn_dataset_options("f8k")


def test_dropout_in_training_needs_and_uses_the_rng():
  m = VSRN(**TINY)  # caption_dropout 0.2
  v = variables(m)
  images, mask, tokens, lengths = batch()
  regions = np.asarray(images[..., :6])  # any [B, N, D] regions
  f = jax.jit(
    lambda key: m.apply(
      v, regions, mask, tokens, lengths, True, method=m.caption_loss, rngs={"dropout": key}
    )
  )
  assert f(jax.random.key(1)) != f(jax.random.key(2))
  assert f(jax.random.key(1)) == f(jax.random.key(1))


def test_gradients_match_float64_finite_differences():
  """float64: directional derivatives of a weighted sum of the embeddings plus the caption
  loss w.r.t. all parameters and the images, train mode; padded regions get no gradient.
  One compilation covers both datasets' switches at once (COCO's fc l2norm and F30K's
  feature BatchNorm are independent fields) and a stack of two ``Rs_GCN`` layers."""
  with jax.enable_x64(True):
    both = dict(fc_l2norm=True, feature_batch_norm=True, gcn_layers=2)
    m = VSRN(**TINY, **both, caption_dropout=0.0, dtype=jnp.float64)
    v = variables(m, dtype=np.float64)
    assert {"Rs_GCN_1", "Rs_GCN_2", "bn"} <= set(v["params"]["img_enc"]), v["params"].keys()
    images, mask, tokens, lengths = batch(dtype=np.float64)
    w = np.random.default_rng(3).normal(size=(2, B, TINY["embed_dim"]))

    def loss(params, images):
      vs = {"params": params, "batch_stats": v["batch_stats"]}
      (img, txt, cap), _ = m.apply(
        vs, images, mask, tokens, lengths, tokens, lengths, True, mutable=["batch_stats"]
      )
      return jnp.sum(w[0] * img) + jnp.sum(w[1] * txt) + 0.1 * cap

    grads = assert_directional_derivatives_match(loss, (v["params"], images))
  assert np.all(np.asarray(grads[1])[~mask] == 0), "padded regions get no gradient"
