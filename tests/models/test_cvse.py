"""The whole CVSE network against a PyTorch transcription of the official code
(``tests/models/cvse_reference.py``), the weights carried over by jitr's converter of the
official 8 state dicts: embeddings, concept distributions and the four loss terms in eval
and train mode (running statistics included); converter refusals; float64 gradients."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import torch
from cvse_reference import CVSE as TorchCVSE
from finite_differences import assert_directional_derivatives_match

from jitr.losses.vse import triplet
from jitr.models import cvse_convert
from jitr.models.cvse import CVSE
from jitr.models.cvse_model import cvse_model
from jitr.models.torch_state import flatten_state_dicts

VOCAB, B, R, F, W, E, C, D = 17, 5, 4, 6, 5, 8, 7, 3  # vocab, batch, regions, ...
LENGTHS = np.array([6, 5, 5, 3, 2])  # sorted: pack_padded_sequence's order


def reference(seed=0):
  """The transcribed official CVSE with every weight and running statistic random."""
  torch.manual_seed(seed)
  rng = np.random.default_rng(seed)
  co = rng.uniform(0.0, 1.0, (C, C))
  adj_all = torch.tensor(co + co.T + np.eye(C), dtype=torch.float32)  # gen_A_concept-like
  ref = TorchCVSE(VOCAB, F, W, E, R, D, adj_all, dropout_rate=0.0)
  with torch.no_grad():
    for name, p in ref.named_parameters():
      if not name.startswith("C_GCN.adj_"):
        p.copy_(torch.tensor(rng.normal(0.0, 0.5, p.shape), dtype=torch.float32))
    for name, buf in ref.named_buffers():
      if name.endswith("running_mean"):
        buf.copy_(torch.tensor(rng.normal(0.0, 0.3, buf.shape), dtype=torch.float32))
      elif name.endswith("running_var"):
        buf.copy_(torch.tensor(rng.uniform(0.5, 1.5, buf.shape), dtype=torch.float32))
  return ref


def flat_state(ref):
  return flatten_state_dicts("test", ref.official_state_dict(), cvse_convert.PREFIXES)


def inputs(seed=1):
  rng = np.random.default_rng(seed)
  images = rng.normal(size=(B, R, F)).astype(np.float32)
  tokens = rng.integers(1, VOCAB, (B, LENGTHS.max())) * (
    np.arange(LENGTHS.max())[None] < LENGTHS[:, None]
  )
  labels = (rng.uniform(size=(B, C)) < 0.4).astype(np.float32)
  vectors = rng.normal(size=(C, D)).astype(np.float32)
  return images, tokens, labels, vectors


def jitr_model(ref, **kw):
  flat = flat_state(ref)
  params, stats = cvse_convert.params_from_state_dict(flat)
  config = cvse_convert.config_from_state_dict(flat)
  assert config == dict(
    vocab_size=VOCAB, img_dim=F, word_dim=W, embed_dim=E, use_bn=True, concept_dim=D, num_region=R
  )
  del config["concept_dim"]
  _, _, _, vectors = inputs()
  module = CVSE(**config, dropout=0.0, **kw)
  model = cvse_model(module, vectors, cvse_convert.adjacency_from_state_dict(flat))
  return model, {"params": params, "batch_stats": stats}


def batch_of(images, tokens, labels):
  return {
    "images": images,
    "image_mask": np.ones((B, R), bool),
    "tokens": tokens,
    "lengths": LENGTHS,
    "concept_labels": labels,
    "image_ids": np.arange(B),
    "valid": np.ones(B, bool),
  }


def torch_forward(ref, images, tokens, labels, vectors, train):
  ref.train(train)
  with torch.no_grad():
    v, t, pv, pt = ref.forward_emb(
      torch.tensor(images),
      torch.tensor(tokens),
      torch.tensor(labels),
      torch.tensor(np.broadcast_to(vectors, (B, C, D)).copy()),
      LENGTHS.tolist(),
      0.85,
    )
    _, terms = ref.forward_loss(v, t, pv, pt)
  return v.numpy(), t.numpy(), pv.numpy(), pt.numpy(), [float(x) for x in terms]


@pytest.mark.parametrize("train", [False, True])
def test_embeddings_scores_and_loss_terms_match_the_official_model(train):
  ref = reference()
  model, variables = jitr_model(ref)
  images, tokens, labels, vectors = inputs()
  v, t, pv, pt, (rank, rank_inst, rank_cons, kl) = torch_forward(
    ref, images, tokens, labels, vectors, train
  )
  batch = batch_of(images, tokens, labels)
  adjacency = cvse_convert.adjacency_from_state_dict(flat_state(ref))
  args = (images, batch["image_mask"], tokens, LENGTHS, labels, vectors, adjacency, train)
  if train:
    (img, txt), _ = model.module.apply(variables, *args, mutable=["batch_stats"])
  else:
    img, txt = model.module.apply(variables, *args)
  for k, name in enumerate(("instance", "consensus", "fused")):
    np.testing.assert_allclose(getattr(img, name), v[k], atol=1e-5, err_msg=f"image {name}")
    np.testing.assert_allclose(getattr(txt, name), t[k], atol=1e-5, err_msg=f"text {name}")
  np.testing.assert_allclose(img.concept_scores, pv, atol=1e-5)
  np.testing.assert_allclose(txt.concept_scores, pt, atol=1e-5)

  out, state = model.forward(variables, batch, train=train)
  # jitr's terms are the official sums over the batch divided by its size
  np.testing.assert_allclose(
    float(triplet(out.images @ out.captions.T, reduction="mean")), rank / B, rtol=1e-5
  )
  np.testing.assert_allclose(float(np.mean(out.aux_losses["instance"])), rank_inst / B, rtol=1e-5)
  np.testing.assert_allclose(float(np.mean(out.aux_losses["consensus"])), rank_cons / B, rtol=1e-5)
  np.testing.assert_allclose(float(np.mean(out.aux_losses["concept_kl"])), kl / B, rtol=1e-5)
  assert model.aux_weights == {"instance": 5.0, "consensus": 1.0, "concept_kl": 2.0}
  if train:  # torch updated its running statistics in forward_emb
    sd = flat_state(ref)
    bn = state["batch_stats"]
    for ours, theirs in (
      (bn["visual_attention"]["bn1"], "V_self_atten_enhance.embedding_1.1"),
      (bn["visual_attention"]["bn2"], "V_self_atten_enhance.embedding_2.1"),
      (bn["visual_consensus"]["bn2"], "V_consensus_level_embedding.embedding_2.1"),
      (bn["textual_consensus"]["bn1"], "T_consensus_level_embedding.embedding_1.1"),
    ):
      np.testing.assert_allclose(ours["mean"], sd[f"{theirs}.running_mean"], atol=1e-5)
      np.testing.assert_allclose(ours["var"], sd[f"{theirs}.running_var"], atol=1e-5)
  else:
    assert state == {}


def test_the_converter_refuses_inconsistent_or_foreign_state_dicts():
  flat = flat_state(reference())
  changed = dict(flat)
  changed["T_consensus_level_embedding.embedding_2.0.weight"] = torch.zeros(E, E)
  with pytest.raises(ValueError, match=r"embedding_2.0.weight differs from .*\.fc2"):
    cvse_convert.params_from_state_dict(changed)
  with pytest.raises(KeyError, match=r"unexpected keys \['img_enc.extra'\]"):
    cvse_convert.params_from_state_dict({**flat, "img_enc.extra": torch.zeros(2)})
  missing = {k: v for k, v in flat.items() if k != "C_GCN.gc2.weight"}
  with pytest.raises(KeyError, match=r"missing key 'C_GCN.gc2.weight'"):
    cvse_convert.params_from_state_dict(missing)
  with pytest.raises(KeyError, match=r"missing key 'C_GCN.adj_all'"):
    cvse_convert.adjacency_from_state_dict({k: v for k, v in flat.items() if "adj_all" not in k})


def _tiny_float64():
  module = CVSE(
    vocab_size=VOCAB,
    img_dim=F,
    word_dim=W,
    embed_dim=4,
    num_region=R,
    dropout=0.0,
    dtype=jnp.float64,
  )
  images, tokens, labels, vectors = inputs()
  co = np.random.default_rng(5).uniform(0.0, 1.0, (C, C))
  adjacency = co + co.T + np.eye(C)
  adjacency = adjacency / np.sqrt(adjacency.sum(1)[:, None] * adjacency.sum(1)[None, :])
  model = cvse_model(module, vectors.astype(np.float64), adjacency)
  batch = jax.tree.map(
    lambda a: a.astype(np.float64) if a.dtype == np.float32 else a,
    batch_of(images, tokens, labels),
  )
  return model, batch


def test_gradients_of_the_whole_loss_match_float64_finite_differences():
  """``triplet(fused) + 5·instance + consensus + 2·KL`` in train mode (batch statistics)."""
  with jax.enable_x64(True):
    model, batch = _tiny_float64()
    shapes = jax.eval_shape(model.init, jax.random.key(0), batch)
    rng = np.random.default_rng(2)
    params = jax.tree.map(lambda s: rng.normal(0.0, 0.5, s.shape), shapes["params"])
    stats = jax.tree.map(lambda s: np.ones(s.shape), shapes["batch_stats"])

    def loss(params, images):
      out, _ = model.forward({"params": params, "batch_stats": stats}, {**batch, "images": images})
      total = triplet(out.images @ out.captions.T)
      return total + sum(model.aux_weights[k] * jnp.mean(v) for k, v in out.aux_losses.items())

    assert_directional_derivatives_match(loss, (params, batch["images"]))


def test_padding_and_batch_order_change_nothing_but_the_order():
  ref = reference()
  model, variables = jitr_model(ref)
  images, tokens, labels, vectors = inputs()
  encode = lambda v, i, m, t, n, y: (  # noqa: E731
    model.encode_images(v, i, m),
    model.encode_captions(v, t, n, y),
  )
  mask = np.ones((B, R), bool)
  img, txt = encode(variables, images, mask, tokens, LENGTHS, labels)
  # two padded region slots fewer (the masked slots hold noise) and two padded words more
  short = mask.copy()
  short[:, -2:] = False
  noisy = images.copy()
  noisy[:, -2:] = 99.0
  img_short, _ = encode(variables, noisy, short, tokens, LENGTHS, labels)
  img_cut, _ = encode(variables, images[:, :-2], mask[:, :-2], tokens, LENGTHS, labels)
  np.testing.assert_allclose(img_short, img_cut, atol=1e-6)
  _, txt_wide = encode(variables, images, mask, np.pad(tokens, ((0, 0), (0, 2))), LENGTHS, labels)
  np.testing.assert_allclose(txt_wide, txt, atol=1e-6)
  order = np.array([3, 0, 4, 1, 2])
  img_p, txt_p = encode(
    variables, images[order], mask, tokens[order], LENGTHS[order], labels[order]
  )
  np.testing.assert_allclose(img_p, img[order], atol=1e-6)
  np.testing.assert_allclose(txt_p, txt[order], atol=1e-6)
  # the representation's dot product is the official 0.95 / 0.05 mix (i2t_sep_sim)
  e_img, e_txt = (
    model.module.apply(
      variables, images, mask, vectors, model_adjacency(ref), method="embed_image"
    ),
    model.module.apply(
      variables, tokens, LENGTHS, labels, vectors, model_adjacency(ref), method="embed_text"
    ),
  )
  want = 0.95 * e_img.fused @ e_txt.fused.T + 0.05 * e_img.consensus @ e_txt.consensus.T
  np.testing.assert_allclose(img @ txt.T, want, atol=1e-6)


def model_adjacency(ref):
  return cvse_convert.adjacency_from_state_dict(flat_state(ref))
