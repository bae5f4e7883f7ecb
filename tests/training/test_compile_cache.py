"""The persistent compilation cache: a second process loads what the first compiled."""

import json
import os
import subprocess
import sys

import pytest

from jitr.training.compile_cache import enable_compilation_cache, enable_run_compilation_cache

_PROGRAM = """
import json, sys
import jax, jax.numpy as jnp
from jitr.training.compile_cache import enable_compilation_cache

hits = []
jax.monitoring.register_event_listener(
  lambda event, **kw: hits.append(event) if event.endswith("cache_hits") else None
)
enable_compilation_cache(sys.argv[1], min_compile_time_secs=0.0)

@jax.jit
def step(x):
  for _ in range(5):
    x = jnp.tanh(x @ x.T) + 1.0
  return x.sum()

print(json.dumps({"value": float(step(jnp.eye(8))), "hits": len(hits)}))
"""


def _run(cache_dir):
  env = dict(os.environ, PYTHONPATH=os.getcwd() + os.pathsep + os.environ.get("PYTHONPATH", ""))
  out = subprocess.run(
    [sys.executable, "-c", _PROGRAM, cache_dir], capture_output=True, text=True, env=env
  )
  assert out.returncode == 0, out.stderr
  return json.loads(out.stdout.strip().splitlines()[-1])


def test_second_process_reads_the_compiled_step_from_the_cache(tmp_path):
  cache = str(tmp_path / "jax_cache")
  first = _run(cache)
  entries = sorted(os.listdir(cache))
  assert first["hits"] == 0 and any(e.startswith("jit_step-") for e in entries), entries
  second = _run(cache)
  assert second["hits"] >= 1 and second["value"] == first["value"]
  assert sorted(os.listdir(cache)) == entries  # nothing compiled afresh


@pytest.fixture
def jax_cache_options():
  """JAX's cache options, restored after the test."""
  import jax

  names = (
    "jax_compilation_cache_dir",
    "jax_persistent_cache_min_compile_time_secs",
    "jax_persistent_cache_min_entry_size_bytes",
  )
  before = {name: getattr(jax.config, name) for name in names}
  yield jax.config
  for name, value in before.items():
    jax.config.update(name, value)


def test_enable_creates_the_folder_and_sets_the_options(tmp_path, jax_cache_options):
  path = enable_compilation_cache(str(tmp_path / "a" / "cache"), min_compile_time_secs=2.5)
  assert os.path.isdir(path) and path == str(tmp_path / "a" / "cache")
  assert jax_cache_options.jax_compilation_cache_dir == path
  assert jax_cache_options.jax_persistent_cache_min_compile_time_secs == 2.5
  assert jax_cache_options.jax_persistent_cache_min_entry_size_bytes == -1


def test_a_run_uses_its_data_dir_unless_the_environment_chose_a_folder(
  tmp_path, monkeypatch, jax_cache_options
):
  monkeypatch.delenv("JAX_COMPILATION_CACHE_DIR", raising=False)
  path = enable_run_compilation_cache(str(tmp_path / "data"))
  assert path == str(tmp_path / "data" / "jax_cache") and os.path.isdir(path)
  assert jax_cache_options.jax_compilation_cache_dir == path
  assert jax_cache_options.jax_persistent_cache_min_compile_time_secs == 0.2
  # the environment's folder: returned, and JAX's options (read from the environment) kept
  jax_cache_options.update("jax_compilation_cache_dir", str(tmp_path / "shared"))
  jax_cache_options.update("jax_persistent_cache_min_compile_time_secs", 0.5)
  monkeypatch.setenv("JAX_COMPILATION_CACHE_DIR", str(tmp_path / "shared"))
  assert enable_run_compilation_cache(str(tmp_path / "other")) == str(tmp_path / "shared")
  assert jax_cache_options.jax_compilation_cache_dir == str(tmp_path / "shared")
  assert jax_cache_options.jax_persistent_cache_min_compile_time_secs == 0.5
  assert not (tmp_path / "other").exists()
