"""The loss terms' config fields (``config.loss``), checked before anything is built: each
term against the loss it names (:func:`jitr.losses.composite.check_terms`: its weight, the
ranges its loss declares for its hyper-parameters, a term that would start too late to
train)."""

from __future__ import annotations

from typing import Any

from jitr.losses.composite import check_terms


def check_loss_terms(config: Any) -> None:
  """Every term of ``config.loss`` checked by its loss; a term that starts at or after the
  last epoch (``from_epoch >= config.num_epochs``) would never train."""
  check_terms(config.loss, num_epochs=config.num_epochs)
