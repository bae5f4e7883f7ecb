"""jitr.torch: jitr's JAX losses inside a PyTorch training loop.

``jitr.torch.loss("smooth_ndcg", sim, relevance, temperature=0.01)`` is a
differentiable PyTorch scalar computed by jitr's jitted JAX loss;
``jitr.torch.per_query(..., reduction="none")`` gives the per-query values; tensors cross
by DLPack. Needs the ``torch`` extra (``pip install jitr[torch]``).
"""

from jitr.losses.triplet_sndcg import triplet_sndcg
from jitr.torch.bridge import cache_size, loss, resolve, to_jax, to_torch
from jitr.torch.buckets import bucket_size, pad_matrix, padded_loss
from jitr.torch.listwise_itr import TripletSNDCGLoss
from jitr.torch.per_query import per_query

__all__ = [
  "TripletSNDCGLoss",
  "bucket_size",
  "cache_size",
  "loss",
  "pad_matrix",
  "padded_loss",
  "per_query",
  "resolve",
  "to_jax",
  "to_torch",
  "triplet_sndcg",
]
