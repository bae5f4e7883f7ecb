"""The loss terms' config fields (``config.loss``), checked before anything is built: each
term's numbers and switches, and a term that would start too late to train."""

from __future__ import annotations

import numbers
from typing import Any

from jitr.config_fields import check_bool, check_number

# Number fields of a loss term and their range: (smallest value, whether it is valid).
TERM_NUMBERS: dict[str, tuple[float, bool]] = {
  "weight": (0.0, True),
  "margin": (0.0, True),
  "max_margin": (0.0, True),
  "triplet_margin": (0.0, True),
  "temperature": (0.0, False),
  "sharpness": (0.0, False),
}
# Switches of a loss term: True or False.
TERM_BOOLEANS: tuple[str, ...] = ("keep_triplet",)


def check_loss_terms(config: Any) -> None:
  """Every loss term's numbers and switches; a term that starts at or after the last
  epoch (``from_epoch >= num_epochs``) would never train."""
  loss = config.loss
  num_epochs = config.num_epochs
  for term_name in loss.keys():
    term = loss[term_name]
    if not hasattr(term, "keys"):
      continue
    for name, (minimum, inclusive) in TERM_NUMBERS.items():
      if name in term and term[name] is not None:
        check_number(f"loss.{term_name}.{name}", term[name], minimum, inclusive)
    for name in TERM_BOOLEANS:
      if name in term:
        check_bool(f"loss.{term_name}.{name}", term[name])
    start = term.get("from_epoch")
    if (
      isinstance(num_epochs, int)
      and isinstance(start, numbers.Real)
      and not isinstance(start, bool)
      and start >= num_epochs
    ):
      raise ValueError(
        f"config.loss.{term_name}.from_epoch: expected less than config.num_epochs "
        f"({num_epochs}), got {start}: the term would never train; raise num_epochs or "
        "lower from_epoch"
      )
