"""``jitr.losses`` and ``jitr.torch`` load nothing of the ``train`` extra, so the core
dependencies (plus torch) are enough for them."""

import subprocess
import sys

# Top-level modules that only the `train` extra installs.
TRAIN_ONLY = ("tensorflow", "flax", "optax", "orbax", "matplotlib", "sklearn")

_PROBE = """
import sys
import jitr
import jitr.losses
import jitr.torch
print(" ".join(sorted({name.split(".")[0] for name in sys.modules})))
"""


def test_losses_and_torch_import_nothing_of_the_train_extra():
  out = subprocess.run(
    [sys.executable, "-c", _PROBE], capture_output=True, text=True, check=True, timeout=300
  )
  loaded = set(out.stdout.split())
  assert "jax" in loaded and "torch" in loaded
  assert not loaded & set(TRAIN_ONLY), sorted(loaded & set(TRAIN_ONLY))
