"""SGR / SAF scoring invariances: padding, permutations, blocking, gradients."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from finite_differences import assert_directional_derivatives_match

from jitr.models.sgraf import SGRAFSimilarity, sgraf_similarity

D, S, R = 8, 4, 5
REGION_COUNTS = np.array([4, 3, 4])
LENGTHS = np.array([6, 3, 5, 2])
CASES = [("SGR", False), ("SGR", True), ("SAF", False), ("SAF", True)]


def head(module, block_size=2):
  """One length bucket: every padded word slot enters the scored blocks (the strictest
  padding check, and one compiled branch instead of one per bucket). Cutting blocks into
  buckets is checked against this uncut scoring in the bucket / remat test below."""
  return SGRAFSimilarity(
    D, S, module, sgr_step=2, num_region=R, dropout=0.0, block_size=block_size, length_buckets=1
  )


def variables(model, seed=0, dtype=np.float32):
  """Random params N(0, 0.7²); running means N(0, 0.3²), variances U(0.5, 1.5)."""
  shapes = jax.eval_shape(model.init, jax.random.key(0), *pair_inputs(4, 6))
  rng = np.random.default_rng(seed)

  def draw(path, s):
    name = jax.tree_util.keystr(path)
    if "var" in name and "batch_stats" in name:
      return rng.uniform(0.5, 1.5, s.shape).astype(dtype)
    return (rng.normal(0, 0.3 if "batch_stats" in name else 0.7, s.shape)).astype(dtype)

  return jax.tree_util.tree_map_with_path(draw, shapes)


def _unit(x):
  return x / np.linalg.norm(x, axis=-1, keepdims=True)


def pair_inputs(n_slots, n_words, seed=0, garbage_seed=1):
  """Regions ``[3, n_slots, D]`` and words ``[4, n_words, D]`` whose valid entries depend only
  on ``seed``; padded entries are large garbage drawn from ``garbage_seed``."""
  rng, junk = np.random.default_rng(seed), np.random.default_rng(garbage_seed)
  regions = 5 * junk.normal(size=(3, n_slots, D))
  regions[:, :4] = np.where(
    (np.arange(4) < REGION_COUNTS[:, None])[..., None],
    _unit(rng.normal(size=(3, 4, D))),
    regions[:, :4],
  )
  words = 5 * junk.normal(size=(4, n_words, D))
  words[:, :6] = np.where(
    (np.arange(6) < LENGTHS[:, None])[..., None], _unit(rng.normal(size=(4, 6, D))), words[:, :6]
  )
  region_mask = np.arange(n_slots)[None] < REGION_COUNTS[:, None]
  word_mask = np.arange(n_words)[None] < LENGTHS[:, None]
  return regions.astype(np.float32), region_mask, words.astype(np.float32), word_mask


@functools.cache
def scorer(module, train, block_size=2):
  model = head(module, block_size)
  return jax.jit(lambda v, *a: model.apply(v, *a, train=train, mutable=["batch_stats"]))


@pytest.mark.parametrize("module,train", CASES)
def test_padding_never_changes_a_score_and_permuting_permutes_the_matrix(module, train):
  """Two compiled scorers: the inputs with 4 region / 6 word slots, and with 5 / 9 slots and
  other garbage in every padded slot, as given and with images and captions permuted."""
  v = variables(head(module))
  base_sim, base_stats = scorer(module, train)(v, *pair_inputs(4, 6))
  padded = pair_inputs(R, 9, garbage_seed=7)
  padded_sim, padded_stats = scorer(module, train)(v, *padded)
  np.testing.assert_allclose(padded_sim, base_sim, atol=1e-6, rtol=0)
  jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, atol=1e-6), padded_stats, base_stats)
  assert np.std(base_sim) > 1e-2
  # padded_sim == base_sim, so this is the permutation check of the padded inputs
  pi, pc = np.array([2, 0, 1]), np.array([3, 1, 0, 2])
  regions, region_mask, words, word_mask = padded
  perm, _ = scorer(module, train)(v, regions[pi], region_mask[pi], words[pc], word_mask[pc])
  np.testing.assert_allclose(perm, np.asarray(base_sim)[pi][:, pc], atol=1e-6, rtol=0)


@pytest.mark.parametrize("module", ["SGR", "SAF"])
def test_blocked_scoring_equals_one_block(module):
  train = True  # batch statistics and SAF's per-caption moments pass through the blocks too
  v = variables(head(module))
  args = pair_inputs(4, 6)
  whole, whole_stats = scorer(module, train, block_size=4)(v, *args)
  for block in (2, 3):  # 2 is the padding test's scorer; 3 leaves a partly padded last block
    sim, stats = scorer(module, train, block_size=block)(v, *args)
    np.testing.assert_allclose(sim, whole, atol=1e-6, rtol=0)
    jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, atol=1e-6), stats, whole_stats)


@pytest.mark.parametrize("module", ["SGR", "SAF"])
def test_length_buckets_and_remat_modes_give_the_same_scores_and_gradients(module):
  """Sorted caption blocks cut to 5 / 9 words (two length buckets: the block of lengths 2, 3
  takes the cut branch, the block of 5, 6 the uncut one; each further bucket would be one
  more compiled branch), with remat ``"full"`` and ``"dots"``, equal the padded length with
  everything stored: scores, SAF's running statistics and
  the gradients of params, regions and words (the custom per-branch VJP of
  ``remat="full"`` included). ``"dots"`` is the ``remat="none"`` block under
  ``jax.checkpoint``, which changes what is stored, not what is computed, so it also
  stands for buckets without remat; the one-bucket ``"full"`` switch is the same custom
  VJP around the uncut branch (and is what ``head`` scores with in the float64
  finite-difference test)."""
  args = pair_inputs(4, 9)  # lengths 6, 3, 5, 2 padded to 9: blocks of 2 cut to 5 and 9
  weights = np.random.default_rng(3).normal(size=(3, 4))
  v = variables(head(module))  # the same parameter shapes for every remat / bucket count

  def sim_and_grads(remat, buckets):
    model = SGRAFSimilarity(
      D, S, module, sgr_step=2, num_region=R, dropout=0.0, block_size=2, remat=remat,
      length_buckets=buckets,
    )  # fmt: skip

    def loss(params, regions, words):
      variables = {"params": params, "batch_stats": v["batch_stats"]}
      sim, stats = model.apply(
        variables, regions, args[1], words, args[3], train=True, mutable=["batch_stats"]
      )
      return jnp.sum(weights * sim), (sim, stats)

    grad_fn = jax.jit(jax.grad(loss, argnums=(0, 1, 2), has_aux=True))
    return grad_fn(v["params"], args[0], args[2])

  want_grads, (want_sim, want_stats) = sim_and_grads("none", 1)
  for remat, buckets in [("full", 2), ("dots", 2)]:
    grads, (sim, stats) = sim_and_grads(remat, buckets)
    np.testing.assert_allclose(sim, want_sim, atol=1e-6, rtol=0)
    close = functools.partial(np.testing.assert_allclose, atol=1e-5, rtol=1e-5)
    jax.tree.map(close, stats, want_stats)
    jax.tree.map(close, grads, want_grads)
  assert np.abs(want_grads[2]).max() > 1e-3  # the words' gradient is not trivially 0


def test_unknown_remat_mode_is_named():
  model = SGRAFSimilarity(D, S, "SGR", num_region=R, remat="some")
  with pytest.raises(ValueError, match="remat must be one of"):
    jax.eval_shape(model.init, jax.random.key(0), *pair_inputs(4, 6))


def test_sgraf_is_the_mean_of_sgr_and_saf():
  got = sgraf_similarity(jnp.array([[0.2, 0.9]]), jnp.array([[0.6, 0.1]]))
  np.testing.assert_allclose(got, [[0.4, 0.5]], rtol=1e-6)


@pytest.mark.parametrize("module", ["SGR", "SAF"])
def test_gradients_match_float64_finite_differences(module):
  """float64: directional derivatives of ``Σ w ⊙ sim`` w.r.t. regions, words and all
  parameters, ``jax.grad`` vs central differences, train mode; padding gets no gradient."""
  with jax.enable_x64(True):
    model = head(module)
    v = variables(model, dtype=np.float64)
    regions, region_mask, words, word_mask = pair_inputs(R, 7)
    weights = np.random.default_rng(3).normal(size=(3, 4))

    def loss(params, regions, words):
      variables = {"params": params, "batch_stats": v["batch_stats"]}
      args = (regions, region_mask, words, word_mask)
      sim, _ = model.apply(variables, *args, train=True, mutable=["batch_stats"])
      return jnp.sum(weights * sim)

    x = (v["params"], regions.astype(np.float64), words.astype(np.float64))
    grads = assert_directional_derivatives_match(loss, x)
  assert np.all(np.asarray(grads[1])[~region_mask] == 0), "padded regions get no gradient"
  assert np.all(np.asarray(grads[2])[~word_mask] == 0), "padded words get no gradient"


def test_unknown_module_is_named():
  with pytest.raises(ValueError, match="module must be one of \\('SGR', 'SAF'\\), got 'AVE'"):
    jax.eval_shape(head("AVE").init, jax.random.key(0), *pair_inputs(4, 6))


def test_more_region_slots_than_batch_norm_channels_is_refused():
  with pytest.raises(ValueError, match="at most num_region=5 region slots"):
    jax.eval_shape(head("SGR").init, jax.random.key(0), *pair_inputs(R + 1, 6))
