"""What a run of a network of pixel towers (``"clip"``) reads: the towers' inputs
(:attr:`jitr.models.Network.tower_inputs`: image size and preprocessing, the captions'
tokenizer and context length) and the run's caption vocabulary built from them."""

from __future__ import annotations

from jitr.data.tower_text_vocab import CLIP_BPE, TowerTextVocab
from jitr.experiment.model_state import model_settings
from jitr.models.registry import MODELS, network_name


def pixel_networks() -> list[str]:
  """The registered networks of pixel towers (:attr:`!jitr.models.Network.tower_inputs`),
  by name."""
  return sorted(name for name, network in MODELS.items() if network.tower_inputs is not None)


def reads_pixels(config) -> bool:
  """Whether ``config.model`` names a network of pixel towers."""
  return network_name(model_settings(config)) in pixel_networks()


def tower_inputs(config):
  """The :class:`!jitr.models.clip.network.TowerInputs` of ``config.model`` (one line
  naming the field when its network reads no pixels)."""
  settings = model_settings(config)
  name = network_name(settings)
  if name not in pixel_networks():
    raise ValueError(
      f"config.model.name: {config['dataset']} is an image folder, read as pixels by "
      f"{pixel_networks()}; got {name!r}"
    )
  return MODELS[name].tower_inputs({k: v for k, v in settings.items() if k != "name"})


def tower_vocab(config) -> TowerTextVocab:
  """The captions' vocabulary of ``config.model``'s text tower."""
  inputs = tower_inputs(config)
  return TowerTextVocab(
    inputs.tokenizer or CLIP_BPE, inputs.context_length, inputs.causal, inputs.vocab_size
  )
