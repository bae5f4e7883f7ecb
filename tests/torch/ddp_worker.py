"""One process of the two-process DistributedDataParallel test (gloo, CPU)."""

import datetime as dt
import types

import torch
import torch.distributed as dist

N, IMG, TXT, DIM, SENT = 8, 12, 10, 6, 5
OPT = dict(margin=0.2, tau=0.05, sndcg_weight=0.5)
OUTPUTS = ("loss", "pairwise", "listwise", "ndcg_t", "real_ndcg_t", "ndcg_v", "real_ndcg_v")


class DualLinear(torch.nn.Module):
  """A linear dual encoder: L2-normalised image and caption embeddings."""

  def __init__(self):
    super().__init__()
    torch.manual_seed(0)
    self.img = torch.nn.Linear(IMG, DIM)
    self.txt = torch.nn.Linear(TXT, DIM)

  def forward(self, images, captions):
    normalize = torch.nn.functional.normalize
    return normalize(self.img(images), dim=1), normalize(self.txt(captions), dim=1)


def batch():
  """The global batch: images, captions, reference and caption sentence embeddings."""
  gen = torch.Generator().manual_seed(1)
  return (
    torch.randn(N, IMG, generator=gen),
    torch.randn(N, TXT, generator=gen),
    torch.randn(N, 5, SENT, generator=gen),
    torch.randn(N, SENT, generator=gen),
  )


def grads(model, loss):
  loss.backward()
  return {name: p.grad.clone() for name, p in model.named_parameters()}


def join_group(rank: int, world: int, store_file: str) -> None:
  """The gloo process group, met through a file (no port to race for), with a timeout so
  that a stalled collective raises instead of hanging."""
  torch.set_num_threads(1)
  dist.init_process_group(
    "gloo",
    init_method=f"file://{store_file}",
    rank=rank,
    world_size=world,
    timeout=dt.timedelta(seconds=120),
  )


def run(rank: int, world: int, ranking: str, out: str, pad: int = 0) -> None:
  """One step of one process in the joined group; ``pad`` > 0 makes ``opt.batch_size``
  larger than the batch (a ragged one)."""
  from jitr.torch import TripletSNDCGLoss

  model = torch.nn.parallel.DistributedDataParallel(DualLinear())
  per = N // world
  images, captions, refs, caps = (x[rank * per : (rank + 1) * per] for x in batch())
  opt = types.SimpleNamespace(**OPT, batch_size=per + pad)
  loss_fn = TripletSNDCGLoss(opt, ranking=ranking)
  v, t = model(images, captions)
  outputs = loss_fn(v, t, refs, caps)
  result = grads(model.module, outputs[0])
  if ranking == "global":  # the loss and the logged values are the global batch's
    result.update(zip(OUTPUTS, (x.detach() for x in outputs)))
  if rank == 0:
    torch.save(result, out)
