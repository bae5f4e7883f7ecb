"""JAX's persistent compilation cache: compiled steps are reused by the next run.

A run's folder is ``<data_dir>/jax_cache``, unless the environment already chose one:
``JAX_COMPILATION_CACHE_DIR`` set (JAX then reads its folder and thresholds from the
environment) is left as it is, so several runs can share one cache."""

from __future__ import annotations

import os

import jax

from jitr import paths

# Only compilations slower than this are stored (eager one-op jits stay out).
MIN_COMPILE_TIME_SECS = 0.2
# -1: no size floor, so small CPU executables are stored too.
MIN_ENTRY_SIZE_BYTES = -1


ENVIRONMENT_VARIABLE = "JAX_COMPILATION_CACHE_DIR"


def enable_run_compilation_cache(data_dir: str) -> str:
  """The cache of a run whose data lives in ``data_dir``: ``$JAX_COMPILATION_CACHE_DIR``
  when set (left as JAX configured it), else :func:`enable_compilation_cache` of
  ``<data_dir>/jax_cache``; returns the absolute folder."""
  chosen = os.environ.get(ENVIRONMENT_VARIABLE)
  if chosen:
    return paths.absolute(chosen)
  return enable_compilation_cache(os.path.join(data_dir, "jax_cache"))


def enable_compilation_cache(
  cache_dir: str,
  *,
  min_compile_time_secs: float = MIN_COMPILE_TIME_SECS,
  min_entry_size_bytes: int = MIN_ENTRY_SIZE_BYTES,
) -> str:
  """Stores every compilation slower than ``min_compile_time_secs`` under
  ``cache_dir`` (created if missing), and reads them back on later runs; returns
  the absolute folder.

  Call it before the first compilation of the process: JAX opens the cache
  once, at the first compilation after a folder is set.
  """
  cache_dir = paths.absolute(cache_dir)
  paths.makedirs(cache_dir)
  jax.config.update("jax_compilation_cache_dir", cache_dir)
  jax.config.update("jax_persistent_cache_min_compile_time_secs", min_compile_time_secs)
  jax.config.update("jax_persistent_cache_min_entry_size_bytes", min_entry_size_bytes)
  return cache_dir
