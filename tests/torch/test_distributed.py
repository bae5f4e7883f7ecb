"""Two gloo processes under DistributedDataParallel: global ranking (each process computing
its own queries' terms) trains exactly as one process on the whole batch and logs its
values; local ranking trains as the mean of the per-process losses."""

import time
import types

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from jitr.torch import TripletSNDCGLoss, distributed
from tests.torch import ddp_worker


def _expected(ranking: str, world: int = 2) -> dict[str, torch.Tensor]:
  """Gradients of one process: the whole batch (global), or the mean of the halves' losses."""
  model = ddp_worker.DualLinear()
  images, captions, refs, caps = ddp_worker.batch()
  v, t = model(images, captions)
  if ranking == "global":
    opt = types.SimpleNamespace(**ddp_worker.OPT, batch_size=ddp_worker.N)
    outputs = TripletSNDCGLoss(opt)(v, t, refs, caps)
    expected = ddp_worker.grads(model, outputs[0])
    return expected | dict(zip(ddp_worker.OUTPUTS, (x.detach() for x in outputs)))
  per = ddp_worker.N // world
  opt = types.SimpleNamespace(**ddp_worker.OPT, batch_size=per)
  halves = [slice(r * per, (r + 1) * per) for r in range(world)]
  losses = [TripletSNDCGLoss(opt)(v[h], t[h], refs[h], caps[h])[0] for h in halves]
  return ddp_worker.grads(model, sum(losses) / world)


def test_without_a_process_group_all_gather_is_the_identity():
  x = torch.randn(3, 2)
  assert distributed.world_size() == 1
  assert distributed.all_gather(x) is x


# (ranking, pad): global ranking on an even batch and on a ragged one (``opt.batch_size``
# larger than the batch), local ranking on an even batch.
CASES = (("global", 0), ("global", 3), ("local", 0))


def _run_cases(rank: int, world: int, store_file: str, outs: list[str]) -> None:
  """One process: joins the group once, then ``ddp_worker.run`` for every case in turn."""
  ddp_worker.join_group(rank, world, store_file)
  try:
    for (ranking, pad), out in zip(CASES, outs):
      ddp_worker.run(rank, world, ranking, out, pad)
  finally:
    dist.destroy_process_group()


def _spawn_two(args, deadline_s: float = 300.0) -> bool:
  """Runs ``_run_cases`` in two spawned processes; ``False`` if they did not finish
  within ``deadline_s`` (both are then killed). A failed process raises."""
  context = mp.start_processes(
    _run_cases,
    args=args,
    nprocs=2,
    join=False,
    start_method="spawn",
  )
  end = time.monotonic() + deadline_s
  while not context.join(timeout=5):
    if time.monotonic() > end:
      for process in context.processes:
        process.kill()
      return False
  return True


@pytest.mark.slow
def test_two_processes_equal_one(tmp_path):
  outs = [str(tmp_path / f"grads_{ranking}_{pad}.pt") for ranking, pad in CASES]
  # The processes meet through a file: no port to race for. A stall still fails the test
  # instead of hanging the suite.
  assert _spawn_two((2, str(tmp_path / "store"), outs)), "two gloo processes did not finish"
  expected_of = {ranking: _expected(ranking) for ranking in {r for r, _ in CASES}}
  for (ranking, pad), out in zip(CASES, outs):
    got = torch.load(out, weights_only=True)
    expected = expected_of[ranking]
    assert set(got) == set(expected), (ranking, pad)
    for name in expected:
      case = f"{ranking}-{pad}, {name}"
      torch.testing.assert_close(
        got[name], expected[name], rtol=1e-5, atol=1e-6, msg=lambda m, case=case: f"{case}: {m}"
      )
