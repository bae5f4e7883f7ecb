"""The official checkpoint of a network: how ``jitr-import`` recognises its state dicts and
what it makes of them.

An official ``train.py`` saves ``{'epoch', 'model': [state dicts], 'best_rsum', 'opt',
'Eiters'}``. An :class:`OfficialFormat` names the prefixes its ``model`` list joins into
one flat state dict (:func:`!jitr.models.torch_state.flatten_state_dicts`), tells its flat
state dict from another codebase's of as many state dicts (:attr:`!OfficialFormat.holds`)
and converts it (:class:`ConvertedWeights`: the network, the model fields the weights fix,
the Flax variables). Its checks compare the weights with what else the run reads: the
saved ``opt``, a pretrained text folder, the dataset constants. A network's registry entry
carries its format (:attr:`!jitr.models.Network.official`).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Mapping
from typing import Any

from jitr.models.torch_state import flatten_state_dicts

FlatStateDict = Mapping[str, Any]


@dataclasses.dataclass(frozen=True)
class ConvertedWeights:
  """An official checkpoint's weights as jitr's.

  Attributes:
    network: the registered network they are (``config.model.name``).
    fields: the model fields the weights fix (``vocab_size`` included).
    img_dim: the width of the image features the image encoder takes.
    params, batch_stats: the Flax variables.
    extra: what the format's own checks read (a concept graph, a BERT's sizes).
  """

  network: str
  fields: dict[str, Any]
  img_dim: int
  params: dict
  batch_stats: dict
  extra: Mapping[str, Any] = dataclasses.field(default_factory=dict)


def any_state(flat: FlatStateDict) -> bool:
  """``True``: every flat state dict of the format's prefixes is the format's."""
  del flat
  return True


def agrees(opt: Mapping[str, Any], weights: ConvertedWeights) -> str | None:
  """``None``: the format's ``opt`` states nothing beyond the shared fields."""
  del opt, weights
  return None


def no_check(*args: Any) -> None:
  """Accepts anything: the format has no such check."""
  del args


@dataclasses.dataclass(frozen=True)
class OfficialFormat:
  """The official checkpoint of a network (module docstring)."""

  codebase: str
  """The official codebase's name, as messages show it (``"SGRAF"``)."""
  prefixes: tuple[str, ...]
  """The prefix of each state dict of ``checkpoint['model']``, in order."""
  convert: Callable[[FlatStateDict], ConvertedWeights]
  """The flat state dict as jitr's weights; a missing key is a ``KeyError`` whose one
  argument is the message."""
  holds: Callable[[FlatStateDict], bool] = any_state
  """Whether a flat state dict of :attr:`prefixes` is this codebase's; two formats of the
  same prefixes must never both hold one (the importer refuses a checkpoint they do)."""
  opt_disagreement: Callable[[Mapping[str, Any], ConvertedWeights], str | None] = agrees
  """Why the saved ``opt`` (as a dict) contradicts the weights in a setting of this
  codebase's own, or ``None``."""
  check_pretrained: Callable[[str, ConvertedWeights], None] = no_check
  """Refuses (``ValueError``, one line) a pretrained text folder
  (``config.text.pretrained``) that is not the one the weights were trained from."""
  check_constants: Callable[
    [Mapping[str, Any], ConvertedWeights, Mapping[str, Any], Mapping[str, str]], None
  ] = no_check
  """``(config.model, weights, dataset constants, where each constant came from)``:
  refuses (``ValueError``, one line) dataset constants that are not those the weights were
  trained with."""
  caption_form: str = ""
  """The caption form the official data loader reads captions in (``config.text.
  caption_form``; ``""``: the caption itself)."""

  def read(self, path: str | os.PathLike, parts: Any) -> dict[str, Any] | None:
    """The flat state dict of ``parts`` (``checkpoint['model']`` of the file at ``path``)
    when they are this codebase's, else ``None``; a NaN / inf weight is refused."""
    flat = flatten_state_dicts(path, parts, self.prefixes)
    return flat if flat is not None and self.holds(flat) else None

  def layout(self) -> str:
    """How messages show ``checkpoint['model']``: ``[img_enc, txt_enc]``."""
    if len(self.prefixes) <= 3:
      return f"[{', '.join(self.prefixes)}]"
    return f"{len(self.prefixes)} state dicts [{self.prefixes[0]}, ..., {self.prefixes[-1]}]"
