"""The paper encoders (recurrent scans inside) train on 4 devices exactly as on one.

The tiny test model has no ``lax.scan``; the real ones do (GRU / BiGRU text, GPO's
BiGRU over positions), and under ``shard_map`` with its varying-axis checks on a scan
whose carry starts from constants failed to trace. Here both real encoders go through
``DataParallel`` and must match the single-device step.
"""

import jax
import numpy as np
import optax
import pytest

from jitr import training
from jitr.models import create_dual_encoder
from jitr.models.vse import dual_encoder_model
from tests.training import tiny


# One model holds both recurrent layers: the GRU text encoder (one forward scan) and GPO's
# BiGRU (a forward and a reversed scan, the same BiGRU as the BiGRU text encoder's).
@pytest.mark.parametrize("text,pooling", [("gru", "gpo")])
def test_paper_encoders_on_four_devices_equal_one_device(text, pooling):
  model = create_dual_encoder(
    vocab_size=20, text=text, image_pooling=pooling, text_pooling="last", embed_dim=8, word_dim=4
  )
  batch = tiny.make_batch(seed=2)
  batch["images"] = np.repeat(batch["images"][:, None, :], 3, axis=1)  # 3 regions per image
  batch["image_mask"] = np.arange(3)[None, :] < np.array([3, 2] * 8)[:, None]
  model = dual_encoder_model(model)
  state = training.create_train_state(
    jax.jit(model.init)(jax.random.key(0), batch), optax.sgd(1.0), jax.random.key(1)
  )
  (ref_state, ref_metrics), (new_state, metrics) = tiny.one_and_parallel_steps(
    model, state, batch, devices=jax.devices()[:4]
  )
  assert float(metrics["loss"]) == pytest.approx(float(ref_metrics["loss"]), abs=1e-5)
  tiny.assert_params_close(ref_state, new_state)
