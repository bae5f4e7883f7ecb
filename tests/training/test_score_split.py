"""score_split: blocked, streamed scoring of a whole split equals scoring it at once."""

import dataclasses

import jax
import numpy as np
import pytest

from jitr.data import pairs
from jitr.models import SGRAF, create_dual_encoder, dual_encoder_model, sgraf_model
from jitr.training.score_split import SplitScorer, block_starts, score_split

N_IMG, PER_IMAGE, REGIONS, FEATURES, WIDTH, VOCAB = 7, 3, 5, 6, 8, 20


def tiny_split(seed=0) -> pairs.RetrievalSplit:
  """7 images of 1..5 valid regions (padding is large garbage), 21 captions of 1..6 words
  in 8 token columns (the last two are padding every caption has)."""
  rng = np.random.default_rng(seed)
  counts = rng.integers(1, REGIONS + 1, N_IMG)
  counts[0] = REGIONS
  image_mask = np.arange(REGIONS)[None] < counts[:, None]
  images = rng.normal(size=(N_IMG, REGIONS, FEATURES)).astype(np.float32)
  images = np.where(image_mask[..., None], images, 50.0).astype(np.float32)
  n_cap = N_IMG * PER_IMAGE
  lengths = rng.integers(1, WIDTH - 1, n_cap).astype(np.int32)
  tokens = rng.integers(1, VOCAB, (n_cap, WIDTH)) * (np.arange(WIDTH)[None] < lengths[:, None])
  return pairs.RetrievalSplit(
    images=images,
    tokens=tokens.astype(np.int32),
    lengths=lengths,
    caption_image=np.repeat(np.arange(N_IMG), PER_IMAGE),
    image_mask=image_mask,
  )


def counting_score(model, calls):
  """``model`` whose ``score`` appends to ``calls`` each time it is traced (or run)."""

  def score(*args, **kwargs):
    calls.append(1)
    return model.score(*args, **kwargs)

  return dataclasses.replace(model, score=score)


def random_variables(shapes, seed=1):
  """Params N(0, 0.5²); BatchNorm running means N(0, 0.2²), variances U(0.5, 1.5)."""
  rng = np.random.default_rng(seed)

  def draw(path, x):
    name = jax.tree_util.keystr(path)
    if "batch_stats" in name:
      if "var" in name:
        return rng.uniform(0.5, 1.5, x.shape).astype(np.float32)
      return rng.normal(0, 0.2, x.shape).astype(np.float32)
    return rng.normal(0, 0.5, x.shape).astype(np.float32)

  return jax.tree_util.tree_map_with_path(draw, shapes)


@pytest.fixture(scope="module")
def sgraf():
  split = tiny_split()
  results = {}
  for name in ("SGR", "SAF"):
    module = SGRAF(
      vocab_size=VOCAB,
      module=name,
      img_dim=FEATURES,
      word_dim=4,
      embed_dim=8,
      sim_dim=4,
      sgr_step=2,
      num_region=REGIONS,
      block_size=3,
      length_buckets=1,  # one compiled branch per scorer; the buckets are the head's concern
    )
    variables = jax.eval_shape(
      module.init,
      jax.random.key(0),
      split.images[:2],
      split.image_mask[:2],
      split.tokens[:2],
      split.lengths[:2],
    )
    variables = random_variables(variables)
    whole = jax.jit(lambda v, *a, module=module: module.apply(v, *a, False))(
      variables, split.images, split.image_mask, split.tokens, split.lengths
    )
    whole = np.asarray(whole)
    results[name] = (module, variables, whole)
  return split, results


def test_block_starts_cover_every_row_once():
  assert block_starts(7, 3) == [(0, 0), (3, 3), (4, 6)]
  assert block_starts(6, 3) == [(0, 0), (3, 3)]
  assert block_starts(4, 4) == [(0, 0)]


@pytest.mark.parametrize(
  "module_name,image_batch,caption_batch",
  [("SGR", 16, 50), ("SAF", 2, 7)],
)
def test_pairwise_blocks_equal_the_whole_split_at_once(
  sgraf, module_name, image_batch, caption_batch
):
  split, results = sgraf
  module, variables, whole = results[module_name]
  assert whole.shape == (N_IMG, N_IMG * PER_IMAGE) and np.std(whole) > 1e-3
  sim = score_split(
    sgraf_model(module),
    variables,
    split,
    image_batch=image_batch,
    caption_batch=caption_batch,
  )
  assert sim.dtype == np.float32
  np.testing.assert_allclose(sim, whole, atol=1e-5, rtol=0)


def test_scorer_compiles_its_block_scorer_once(sgraf):
  """Blocks that do not divide either count (3 x 6 blocks of 3 x 4), scored twice."""
  split, results = sgraf
  module, variables, whole = results["SGR"]
  calls = []
  scorer = SplitScorer(counting_score(sgraf_model(module), calls), image_batch=3, caption_batch=4)
  first = scorer(variables, split)  # 3 x 6 blocks
  again = scorer(variables, split)
  assert len(calls) == 1
  np.testing.assert_array_equal(first, again)
  np.testing.assert_allclose(first, whole, atol=1e-5, rtol=0)


@pytest.fixture(scope="module")
def dual():
  split = tiny_split(seed=2)
  module = create_dual_encoder(vocab_size=VOCAB, embed_dim=8, word_dim=4)
  variables = jax.jit(module.init)(
    jax.random.key(0), split.images[:2], split.tokens[:2], split.lengths[:2], split.image_mask[:2]
  )
  enc_img = jax.jit(lambda v, x, m: module.apply(v, x, m, method="encode_image"))
  enc_txt = jax.jit(lambda v, t, n: module.apply(v, t, n, method="encode_text"))
  img = np.asarray(enc_img(variables, split.images, split.image_mask))
  txt = np.asarray(enc_txt(variables, split.tokens, split.lengths))
  return split, module, variables, (img, txt)


@pytest.mark.parametrize("image_batch,caption_batch", [(7, 21), (3, 4), (16, 50)])
def test_embedding_model_is_the_dot_product_of_its_towers(dual, image_batch, caption_batch):
  split, module, variables, (img, txt) = dual
  sim = score_split(
    dual_encoder_model(module),
    variables,
    split,
    image_batch=image_batch,
    caption_batch=caption_batch,
  )
  np.testing.assert_allclose(sim, img @ txt.T, atol=1e-5, rtol=0)


def test_bad_block_size_is_refused():
  with pytest.raises(ValueError, match="caption_batch must be >= 1"):
    SplitScorer(dual_encoder_model(None), image_batch=2, caption_batch=0)
