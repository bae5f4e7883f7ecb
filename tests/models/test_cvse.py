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
from cvse_reference import randomize
from finite_differences import assert_directional_derivatives_match

from jitr.losses.triplet import triplet
from jitr.models.cvse import CVSE
from jitr.models.cvse import convert as cvse_convert
from jitr.models.cvse.adapter import concept_kl, cvse_model
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
  randomize(ref, rng, weight_scale=0.5, mean_scale=0.3)
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
  assert model.aux_weights == pytest.approx(
    {"instance": 5 / 3, "consensus": 1 / 3, "concept_kl": 2 / 3}
  )
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
  # the representations' eval_similarity is the official 0.95 / 0.05 mix (i2t_sep_sim)
  e_img, e_txt = (
    model.module.apply(
      variables, images, mask, vectors, model_adjacency(ref), method="embed_image"
    ),
    model.module.apply(
      variables, tokens, LENGTHS, labels, vectors, model_adjacency(ref), method="embed_text"
    ),
  )
  want = 0.95 * e_img.fused @ e_txt.fused.T + 0.05 * e_img.consensus @ e_txt.consensus.T
  np.testing.assert_allclose(model.eval_similarity(img, txt), want, atol=1e-6)
  # on the host in float64 (the official protocol), from the same float32 embeddings
  img64, txt64 = np.asarray(img, np.float64), np.asarray(txt, np.float64)
  fused = np.asarray(e_img.fused, np.float64) @ np.asarray(e_txt.fused, np.float64).T
  consensus = np.asarray(e_img.consensus, np.float64) @ np.asarray(e_txt.consensus, np.float64).T
  np.testing.assert_array_equal(
    model.eval_similarity(img64, txt64),
    0.95 * fused + (1 - 0.95) * consensus,  # i2t_sep_sim: w, 1 - w
  )


def model_adjacency(ref):
  return cvse_convert.adjacency_from_state_dict(flat_state(ref))


def test_the_evaluation_procedure_matches_the_official_one():
  """``evalrank``'s two passes on a generated split (6 images, 5 captions each): first
  encoding with each caption's own concept labels (``data.py`` labels a validation or test
  caption with the concepts it mentions), ``label_complete`` (f30k), the second encoding
  with the completed labels, the 0.95 / 0.05 mix and R@1/5/10 both ways: jitr's
  :class:`SplitScorer` gives the official score matrix and recalls."""
  from test_cvse_completion import (
    official_complete,
    official_i2t_sep_sim,
    official_label_complete,
    official_t2i_sep_sim,
  )

  from jitr.data.pairs import RetrievalSplit
  from jitr.evaluation.official import official_i2t_ranks, official_t2i_ranks
  from jitr.evaluation.positives import positives_from_owner
  from jitr.evaluation.ranks import best_positive_ranks
  from jitr.evaluation.recall import recall_at_k
  from jitr.evaluation.sources import DenseScores
  from jitr.training.score_split import SplitScorer

  n_img = 6
  rng = np.random.default_rng(11)
  images = rng.normal(size=(n_img, R, F)).astype(np.float32)
  lengths = rng.integers(2, 7, 5 * n_img)
  tokens = rng.integers(1, VOCAB, (5 * n_img, 6)) * (np.arange(6)[None] < lengths[:, None])
  image_labels = (rng.uniform(size=(n_img, C)) < 0.4).astype(np.float32)
  caption_labels = (rng.uniform(size=(5 * n_img, C)) < 0.3).astype(np.float32)
  owner = np.arange(5 * n_img) // 5
  ref = reference(3)
  model, variables = jitr_model(ref)
  _, _, _, vectors = inputs()

  def official_encode(labels):  # encode_data: one row per caption, images repeated
    order = np.argsort(-lengths, kind="stable")
    ref.eval()
    with torch.no_grad():
      v, t, _, _ = ref.forward_emb(
        torch.tensor(images[owner[order]]),
        torch.tensor(tokens[order, : lengths.max()]),
        torch.tensor(labels[order]),
        torch.tensor(np.broadcast_to(vectors, (len(order), C, D)).copy()),
        lengths[order].tolist(),
        0.85,
      )
    back = np.argsort(order)
    return [x.numpy()[back] for x in (v[2], t[2], v[1], t[1])]

  img_f, cap_f, _, _ = official_encode(caption_labels)
  neighbours = official_label_complete(img_f, cap_f, "f30k")
  completed = official_complete(caption_labels, neighbours)
  assert (completed != caption_labels).any()  # the completion changes labels
  img_f, cap_f, img_c, cap_c = official_encode(completed)
  official = 0.95 * img_f[::5] @ cap_f.T + 0.05 * img_c[::5] @ cap_c.T

  split = RetrievalSplit(
    images=images,
    tokens=tokens,
    lengths=lengths,
    caption_image=owner,
    image_mask=np.ones((n_img, R), bool),
    concept_labels=image_labels,  # training batches' labels: not read by the evaluation
    caption_concept_labels=caption_labels,
  )
  scorer = SplitScorer(model, image_batch=4, caption_batch=7)
  sim = scorer(variables, split)
  np.testing.assert_allclose(sim, official, atol=1e-5)
  # the official protocol's matrix: the same embeddings scored on the host in float64
  sim64 = scorer(variables, split, official=True)
  assert (sim.dtype, sim64.dtype) == (np.float32, np.float64)
  np.testing.assert_allclose(sim64, sim, atol=1e-6)
  assert not np.array_equal(sim64, sim.astype(np.float64))
  i2t, t2i = positives_from_owner(owner)
  ranks_i2t, _ = best_positive_ranks(sim, i2t)
  ranks_t2i, _ = best_positive_ranks(DenseScores(sim, transpose=True), t2i)
  for got, official_ranks, (want, want_ranks) in (
    (ranks_i2t, official_i2t_ranks, official_i2t_sep_sim(img_f, cap_f, img_c, cap_c, 0.95)),
    (ranks_t2i, official_t2i_ranks, official_t2i_sep_sim(img_f, cap_f, img_c, cap_c, 0.95)),
  ):
    np.testing.assert_array_equal(got, want_ranks)
    np.testing.assert_array_equal(official_ranks(sim64), want_ranks)
    r = recall_at_k(got, (1, 5, 10))
    assert [100 * r[k] for k in (1, 5, 10)] == pytest.approx(list(want), rel=1e-12)


def test_the_concept_kl_is_finite_where_a_visual_probability_underflows():
  text = jnp.array([[0.5, 0.5, 0.0]])
  image = jnp.array([[1.0, 0.0, 0.0]])  # softmax(10 · a) of far-apart logits
  got = float(concept_kl(text, image)[0])
  tiny = float(jnp.finfo(jnp.float32).tiny)
  assert np.isfinite(got)
  assert got == pytest.approx(0.5 * np.log(0.5) + 0.5 * np.log(0.5) - 0.5 * np.log(tiny), rel=1e-5)
  np.testing.assert_allclose(  # the ordinary case: the KL divergence
    concept_kl(jnp.array([[0.2, 0.8]]), jnp.array([[0.5, 0.5]])),
    [0.2 * np.log(0.4) + 0.8 * np.log(1.6)],
    rtol=1e-6,
  )
