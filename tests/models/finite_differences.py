"""float64 finite-difference gradient check shared by the model property tests."""

import jax
import jax.numpy as jnp
import numpy as np


def assert_directional_derivatives_match(loss, x, *, directions=3, seed=4, h=1e-6):
  """For ``directions`` random directions ``d`` (``N(0, 1)`` in every leaf of ``x``), checks
  ``⟨∇loss(x), d⟩ = (loss(x + h·d) − loss(x − h·d)) / 2h`` (central differences, error
  ``O(h²)``) to ``rtol = 1e-6``. Call it inside ``jax.enable_x64(True)`` with float64 ``x``:
  in float32 the rounding error of the difference, ``~1e-7 / h``, would swamp the check.

  ``loss`` takes the items of the tuple ``x`` as positional arguments. One compiled
  ``value_and_grad`` gives both sides (compiling it dominates the cost on CPU; running its
  backward pass at the shifted points costs little). Returns the gradient tuple at ``x``
  for further checks (padding, ...).
  """
  assert jax.config.jax_enable_x64, "run the finite-difference check in float64"
  assert all(np.asarray(a).dtype == np.float64 for a in jax.tree.leaves(x)), "float64 inputs"
  value_and_grad = jax.jit(jax.value_and_grad(loss, argnums=tuple(range(len(x)))))
  value = lambda *a: value_and_grad(*a)[0]
  _, grads = value_and_grad(*x)
  rng = np.random.default_rng(seed)
  for _ in range(directions):
    d = jax.tree.map(lambda a: rng.normal(size=np.shape(a)), x)
    plus = jax.tree.map(lambda a, b: a + h * b, x, d)
    minus = jax.tree.map(lambda a, b: a - h * b, x, d)
    numeric = (value(*plus) - value(*minus)) / (2 * h)
    analytic = sum(jnp.vdot(g, b) for g, b in zip(jax.tree.leaves(grads), jax.tree.leaves(d)))
    np.testing.assert_allclose(analytic, numeric, rtol=1e-6, atol=1e-8)
  return grads
