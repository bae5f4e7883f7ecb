"""What a run of a network of pixel towers (``"clip"``) reads: the towers' inputs
(:attr:`jitr.models.Network.tower_inputs`: image size and preprocessing, the captions'
tokenizer and context length) and the run's caption vocabulary built from them."""

from __future__ import annotations

from typing import Any

from jitr.data.tower_text_vocab import CLIP_BPE, TowerTextVocab
from jitr.models.registry import MODELS, network_name


def model_config(config) -> dict[str, Any]:
  """``config.model`` as a dict (a run config or its JSON)."""
  model = config["model"]
  return dict(model.to_dict() if hasattr(model, "to_dict") else model)


def reads_pixels(config) -> bool:
  """Whether ``config.model`` names a network of pixel towers."""
  network = MODELS.get(network_name(model_config(config)))
  return network is not None and network.tower_inputs is not None


def tower_inputs(config):
  """The :class:`!jitr.models.clip.network.TowerInputs` of ``config.model`` (one line
  naming the field when its network reads no pixels)."""
  settings = model_config(config)
  name = network_name(settings)
  network = MODELS.get(name)
  if network is None or network.tower_inputs is None:
    pixel_networks = sorted(n for n, net in MODELS.items() if net.tower_inputs is not None)
    raise ValueError(
      f"config.model.name: {config['dataset']} is an image folder, read as pixels by "
      f"{pixel_networks}; got {name!r}"
    )
  return network.tower_inputs({k: v for k, v in settings.items() if k != "name"})


def tower_vocab(config) -> TowerTextVocab:
  """The captions' vocabulary of ``config.model``'s text tower."""
  inputs = tower_inputs(config)
  return TowerTextVocab(
    inputs.tokenizer or CLIP_BPE, inputs.context_length, inputs.causal, inputs.vocab_size
  )
