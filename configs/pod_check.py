"""A launch check for pods and clusters: a run of about a minute on jitr_shapes' tiny split
(built on first use, nothing to download), before a long run is started the same way:

  srun jitr-train --config=configs/pod_check.py --workdir=/shared/runs/pod_check

It goes through everything a long multi-host run needs: every process joins the job JAX
detects, each host reads its share of every batch, the listwise loss (Smooth-NDCG on the
exact relevance, no estimator to precompute) ranks over the global batch, validation after
each epoch, checkpoints (a SIGTERM stops it at one step on every process, exit 75, and the
same command resumes), then the test split's results table, printed by every process (they
must be equal). The global batch (64) must split evenly over the processes and each one's
devices: raise it with --config.batch_size (a multiple of processes x devices per process)
on a larger slice.
"""

import importlib.util
import pathlib

import ml_collections

_DEFAULT = pathlib.Path(__file__).with_name("default.py")
_spec = importlib.util.spec_from_file_location("jitr_configs_default", _DEFAULT)
default = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(default)


def get_config() -> ml_collections.ConfigDict:
  c = default.get_config()
  c.shapes_config = "tiny"  # 40 / 10 / 10 images, 5 captions each
  c.graded = ml_collections.ConfigDict({"relevance": "oracle"})
  c.model.embed_dim = 32
  c.model.word_dim = 16
  c.batch_size = 64
  c.eval_batch_size = 50
  c.num_epochs = 3  # the warm-up epoch, then the hardest-negative triplet + Smooth-NDCG
  c.log_every_steps = 1
  c.token_buckets = ()  # one caption width: one compile of the train step
  c.distributed.stop_check_every_steps = 1
  return c
