"""Training: optimizer, train state, the pure train step and data parallelism.

``make_train_step(loss_fn, model=...)`` builds the per-device step for any
:class:`jitr.models.RetrievalModel` (representations gathered over the ``batch``
axis so listwise losses rank over the global batch, each device computing only
its own queries' terms, gradients summed over devices, auxiliary model losses
added, running statistics kept in ``TrainState.model_state``);
``DataParallel`` runs it with ``jax.shard_map`` on a 1-D mesh or with
``jax.pmap``, giving the same numbers.
"""

from jitr.training.optimizer import make_optimizer, make_schedule
from jitr.training.parallel import DataParallel
from jitr.training.state import TrainState, create_train_state
from jitr.training.step import in_batch_targets, make_train_step

__all__ = [
  "DataParallel",
  "TrainState",
  "create_train_state",
  "in_batch_targets",
  "make_optimizer",
  "make_schedule",
  "make_train_step",
]
