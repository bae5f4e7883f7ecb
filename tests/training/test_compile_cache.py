"""The persistent compilation cache: a second process loads what the first compiled."""

import json
import os
import subprocess
import sys

from jitr.training.compile_cache import enable_compilation_cache

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


def test_enable_creates_the_folder_and_sets_the_options(tmp_path):
  import jax

  before = (
    jax.config.jax_compilation_cache_dir,
    jax.config.jax_persistent_cache_min_compile_time_secs,
    jax.config.jax_persistent_cache_min_entry_size_bytes,
  )
  try:
    path = enable_compilation_cache(str(tmp_path / "a" / "cache"), min_compile_time_secs=2.5)
    assert os.path.isdir(path) and path == str(tmp_path / "a" / "cache")
    assert jax.config.jax_compilation_cache_dir == path
    assert jax.config.jax_persistent_cache_min_compile_time_secs == 2.5
    assert jax.config.jax_persistent_cache_min_entry_size_bytes == -1
  finally:
    jax.config.update("jax_compilation_cache_dir", before[0])
    jax.config.update("jax_persistent_cache_min_compile_time_secs", before[1])
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", before[2])
