"""A run's validations over training: ``<workdir>/validation.json``.

Every validation (after each epoch, and every ``config.eval_every_steps`` steps within an
epoch) adds ``{"step": s, "epoch": s / steps_per_epoch, "metrics": {key: value}}``, the
run's headline validation metrics, to the file's ``validations`` (in step order; a
resumed run validates the steps after its checkpoint again, which replaces what an
interrupted one had written there). What it answers: how many epochs a run needed to
reach a validation score, e.g. LSEH's Table 3 (the epochs LMH and LSEH need to reach
LMH's best M-Recall).
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from typing import Any

from jitr import fileio, paths

HISTORY_NAME = "validation.json"
EXPECTED = 'a JSON object {"steps_per_epoch": N, "validations": [{"step", "epoch", "metrics"}]}'


def history_path(workdir: str) -> str:
  """``<workdir>/validation.json``."""
  return os.path.join(workdir, HISTORY_NAME)


def read_history(path: str) -> list[dict[str, Any]]:
  """The validations of the file at ``path`` (``[]`` when there is none); one line naming
  the file when it is not :data:`EXPECTED`."""
  if not paths.exists(path):
    return []
  data = fileio.read_json(path)
  validations = data.get("validations") if isinstance(data, dict) else None
  if not isinstance(validations, list) or not all(
    isinstance(v, dict) and {"step", "epoch", "metrics"} <= set(v) for v in validations
  ):
    raise ValueError(f"{path}: not {EXPECTED}")
  return validations


def with_validation(
  history: Sequence[Mapping[str, Any]],
  step: int,
  steps_per_epoch: int,
  metrics: Mapping[str, float],
) -> list[dict[str, Any]]:
  """``history`` up to before ``step``, then the validation of ``step``: ``epoch`` is
  ``step / steps_per_epoch`` (fractional within an epoch)."""
  kept = [dict(v) for v in history if v["step"] < step]
  entry = {"step": int(step), "epoch": step / steps_per_epoch, "metrics": dict(metrics)}
  return [*kept, entry]


def write_history(path: str, history: Sequence[Mapping[str, Any]], steps_per_epoch: int) -> None:
  """``history`` as :data:`EXPECTED`, written atomically (NaN as null)."""
  validations = [
    {**v, "metrics": {k: None if math.isnan(x) else x for k, x in v["metrics"].items()}}
    for v in history
  ]
  data = {"steps_per_epoch": steps_per_epoch, "validations": validations}
  fileio.write_json_atomic(path, data, indent=1, allow_nan=False)


def best_validation(history: Sequence[Mapping[str, Any]], key: str) -> tuple[float, float]:
  """``(value, epoch)`` of the first validation with the highest ``metrics[key]``.

  >>> h = [{"step": 5, "epoch": 0.5, "metrics": {"m": 1.0}},
  ...      {"step": 10, "epoch": 1.0, "metrics": {"m": 3.0}},
  ...      {"step": 15, "epoch": 1.5, "metrics": {"m": 3.0}}]
  >>> best_validation(h, "m")
  (3.0, 1.0)
  """
  scored = [(v["metrics"][key], v["epoch"]) for v in history if v["metrics"].get(key) is not None]
  if not scored:
    raise ValueError(f"validation history: no validation with {key!r}")
  best = max(value for value, _ in scored)
  return best, next(epoch for value, epoch in scored if value == best)


def epochs_to_reach(history: Sequence[Mapping[str, Any]], key: str, target: float) -> float | None:
  """The epoch of the first validation whose ``metrics[key]`` is at least ``target``
  (``None``: none reached it).

  >>> h = [{"step": 5, "epoch": 0.5, "metrics": {"m": 1.0}},
  ...      {"step": 10, "epoch": 1.0, "metrics": {"m": 3.0}}]
  >>> epochs_to_reach(h, "m", 2.0), epochs_to_reach(h, "m", 4.0)
  (1.0, None)
  """
  for v in history:
    value = v["metrics"].get(key)
    if value is not None and value >= target:
      return v["epoch"]
  return None
