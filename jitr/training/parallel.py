"""Data parallelism over a named ``batch`` axis: ``jax.shard_map`` or ``jax.pmap``."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Literal

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

Backend = Literal["shard_map", "pmap"]


class DataParallel:
  """Runs a per-device step ``f(state, batch) -> (state, metrics)`` on many devices.

  ``backend="shard_map"`` (default): a 1-D mesh named ``axis_name`` over
  ``devices``; the state is replicated, the batch split along its first axis,
  and the global batch is assembled from each process's local rows with
  ``jax.make_array_from_process_local_data`` (multi-host ready).
  ``backend="pmap"``: the same step under ``jax.pmap`` (state stacked over
  this process's devices, each process feeding its own rows), for pmap-style
  data parallelism; it gives identical numbers, with one or several processes.

  Usage::

    dp = DataParallel(make_train_step(loss_fn, model=model), backend="shard_map")
    state = dp.put_state(state)
    state, metrics = dp(state, dp.put_batch(host_batch))
    host_state = dp.get_state(state)
  """

  def __init__(
    self,
    step_fn: Callable[..., Any],
    *,
    backend: Backend = "shard_map",
    devices: Sequence[jax.Device] | None = None,
    axis_name: str = "batch",
    donate: bool = True,
  ):
    self.devices = list(devices) if devices is not None else jax.devices()
    self.backend = backend
    self.axis_name = axis_name
    donate_argnums = (0,) if donate else ()
    if backend == "shard_map":
      self.mesh = Mesh(np.asarray(self.devices), (axis_name,))
      # check_vma on: the outputs declared replicated (P()) must really be
      # device-invariant (psum-ed), which JAX checks at trace time.
      mapped = jax.shard_map(
        step_fn, mesh=self.mesh, in_specs=(P(), P(axis_name)), out_specs=(P(), P()), check_vma=True
      )
      self._step = jax.jit(mapped, donate_argnums=donate_argnums)
      self._replicated = NamedSharding(self.mesh, P())
      self._split = NamedSharding(self.mesh, P(axis_name))
    elif backend == "pmap":
      self._step = jax.pmap(
        step_fn, axis_name=axis_name, devices=self.devices, donate_argnums=donate_argnums
      )
    else:
      raise ValueError(f"backend: expected 'shard_map' or 'pmap', got {backend!r}")

  @property
  def num_devices(self) -> int:
    return len(self.devices)

  def put_state(self, state: Any) -> Any:
    if self.backend == "shard_map":
      if jax.process_count() == 1:
        return jax.device_put(state, self._replicated)
      # Multi-process: device_put refuses a mesh holding other processes' devices
      # for PRNG-key leaves, so each replicated leaf is built from this process's
      # (identical) full copy; keys go through their raw key data.
      return jax.tree.map(self._replicate, state)
    # pmap takes a leading axis over this process's devices, one slice each.
    return jax.tree.map(lambda x: jax.numpy.stack([x] * self._local_devices), state)

  @property
  def _local_devices(self) -> int:
    return sum(d.process_index == jax.process_index() for d in self.devices)

  def _replicate(self, x: Any) -> jax.Array:
    if jax.dtypes.issubdtype(x.dtype, jax.dtypes.prng_key):
      return jax.random.wrap_key_data(
        self._replicate(jax.random.key_data(x)), impl=jax.random.key_impl(x)
      )
    return jax.make_array_from_process_local_data(self._replicated, np.asarray(x))

  def get_state(self, state: Any) -> Any:
    if self.backend == "shard_map":
      return state
    return jax.tree.map(lambda x: x[0], state)

  def put_batch(self, batch: dict[str, Any]) -> dict[str, Any]:
    """Places this process's rows of the global batch (split over the devices)."""
    local = self._local_devices
    for name, value in batch.items():
      if np.shape(value)[0] % local:
        raise ValueError(
          f"batch[{name!r}]: {np.shape(value)[0]} rows do not split over {local} devices; "
          f"use a per-process batch size divisible by {local}"
        )
    if self.backend == "shard_map":
      return {
        k: jax.make_array_from_process_local_data(self._split, np.asarray(v))
        for k, v in batch.items()
      }
    # pmap with several processes maps each process's rows over its own devices.
    return {k: np.reshape(np.asarray(v), (local, -1) + np.shape(v)[1:]) for k, v in batch.items()}

  def __call__(self, state: Any, batch: dict[str, Any]) -> tuple[Any, dict[str, jax.Array]]:
    state, metrics = self._step(state, batch)
    if self.backend == "pmap":
      metrics = jax.tree.map(lambda x: x[0], metrics)
    return state, metrics
