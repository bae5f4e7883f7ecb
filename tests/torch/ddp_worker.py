"""One process of the two-process DistributedDataParallel test (gloo, CPU)."""

import os
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


def run(rank: int, world: int, port: int, ranking: str, out: str, pad: int = 0) -> None:
  """One process; ``pad`` > 0 makes ``opt.batch_size`` larger than the batch (a ragged one)."""
  from jitr.torch import TripletSNDCGLoss

  os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
  dist.init_process_group("gloo", rank=rank, world_size=world)
  try:
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
  finally:
    dist.destroy_process_group()
