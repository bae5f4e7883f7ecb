"""The config fields a run's network reads, checked before anything is built: the text
group (the BERT folder and a network of WordPiece captions, the augmentation
probabilities), the network reading the dataset's captions, caption chunks and the concept
files of a network that reads concepts (``config.concepts``). What a network reads is its
registry entry's declaration (:class:`jitr.models.Network`: ``wordpiece``, ``inputs``,
``token_chunks``), never its name."""

from __future__ import annotations

import os
from typing import Any

from jitr import paths
from jitr.config_fields import check_divides_batch, check_probability
from jitr.data.concept_data import VECTOR_CHOICES
from jitr.data.datasets import DatasetInfo
from jitr.experiment.run_caption_form import check_caption_form_setting
from jitr.experiment.run_concepts import LABEL_CHOICES, OFFICIAL_LABELS
from jitr.experiment.run_tokenizer import check_tokenizer_setting
from jitr.experiment.run_tower import pixel_networks
from jitr.models.registry import MODELS, network_name, network_of

# Probabilities of the training augmentation: each in [0, 1).
PROBABILITIES: tuple[str, ...] = ("text.word_augment", "image.region_drop")
# What a Hugging Face BERT folder must hold to tokenise the captions and build the BERT.
BERT_FOLDER_FILES: tuple[str, ...] = ("vocab.txt", "config.json")


def wordpiece_networks() -> list[str]:
  """The registered networks that read WordPiece captions and a pretrained BERT
  (:attr:`!jitr.models.Network.wordpiece`), by name."""
  return sorted(name for name, network in MODELS.items() if network.wordpiece)


def check_text(config: Any) -> None:
  """``config.text`` and ``config.image`` (configs/default.py): the probabilities in
  [0, 1); ``text.pretrained`` a string naming a folder with ``vocab.txt`` and
  ``config.json``. A network of WordPiece captions (:func:`wordpiece_networks`: ``"vseinf"``)
  and ``text.pretrained`` go together: the network reads WordPiece captions (``[CLS]`` ...
  ``[SEP]``) and its BERT is the folder's, so either without the other is refused, and so
  is a ``config.model.pretrained`` (the folder is ``text.pretrained``).
  ``text.word_augment`` > 0 needs ``text.pretrained`` (it rewrites WordPiece captions);
  ``vocab_file`` must then be empty, and ``text.tokenizer`` too
  (:func:`jitr.experiment.run_tokenizer.check_tokenizer_setting`). ``text.caption_form``:
  :func:`jitr.experiment.run_caption_form.check_caption_form_setting`."""
  for field in PROBABILITIES:
    group, name = field.split(".")
    check_probability(field, config[group][name])
  folder = config.text.pretrained
  if not isinstance(folder, str):
    raise ValueError(
      f"config.text.pretrained: expected a string (a BERT folder or ''), got {folder!r}"
    )
  if "pretrained" in config.model:
    raise ValueError(
      "config.model.pretrained: not a run setting; give the BERT folder as "
      "--config.text.pretrained=FOLDER (its vocab.txt also tokenises the captions)"
    )
  check_wordpiece(network_name(config.model), folder)
  if config.text.word_augment and not folder:
    raise ValueError(
      "config.text.word_augment: needs config.text.pretrained (the augmentation rewrites "
      "WordPiece captions)"
    )
  if folder and config.vocab_file:
    raise ValueError(
      "config.vocab_file: expected '' with config.text.pretrained (its vocab.txt is the vocabulary)"
    )
  check_tokenizer_setting(config.text)
  check_caption_form_setting(config.text)
  for name in BERT_FOLDER_FILES if folder else ():
    if not paths.isfile(os.path.join(folder, name)):
      raise ValueError(
        f"config.text.pretrained: {folder} holds no {name}; expected a Hugging Face BERT "
        "folder (config.json, vocab.txt, the weights)"
      )


def check_wordpiece(name: str, folder: str) -> None:
  """The network ``name`` reads WordPiece captions (:attr:`!jitr.models.Network.wordpiece`)
  exactly when the run names a BERT ``folder`` (``config.text.pretrained``)."""
  network = MODELS.get(name)
  wordpiece = network is not None and network.wordpiece
  if wordpiece and not folder:
    raise ValueError(
      f"config.text.pretrained: the {name!r} network needs a Hugging Face BERT "
      "folder; give --config.text.pretrained=FOLDER"
    )
  if folder and not wordpiece:
    readers = " or ".join(map(repr, wordpiece_networks()))
    raise ValueError(
      f"config.text.pretrained: only the {readers} network reads WordPiece "
      f"captions and a BERT; config.model.name is {name!r}"
    )


def check_token_chunks(config: Any) -> None:
  """``config.token_chunks`` > 1 needs a network that encodes each caption alone
  (:attr:`!jitr.models.Network.token_chunks`) and a ``batch_size`` it divides (the
  devices' share is checked when they are known, :func:`!jitr.data.token_chunks.chunked_tokens`)."""
  chunks = config.token_chunks
  if chunks == 1:
    return
  name, network = network_of(config.model)
  if not network.token_chunks:
    takers = sorted(n for n, net in MODELS.items() if net.token_chunks)
    raise ValueError(
      f"config.token_chunks: the {name!r} network does not encode its captions in chunks; "
      f"expected 1, or a network of {takers}"
    )
  check_divides_batch(config, "token_chunks")


def check_concepts(config: Any) -> None:
  """``config.concepts``: ``source`` a string, ``num_concepts`` a whole
  number >= 2, ``vectors`` one of :data:`!jitr.data.concept_data.VECTOR_CHOICES`,
  ``labels`` one of :data:`!jitr.experiment.run_concepts.LABEL_CHOICES`, ``wordnet`` a
  string, not empty with ``labels`` ``"official"``."""
  concepts = config.concepts
  source = concepts.source
  if not isinstance(source, str):
    raise ValueError(f"config.concepts.source: expected a string (a folder or ''), got {source!r}")
  count = concepts.num_concepts
  if isinstance(count, bool) or not isinstance(count, int) or count < 2:
    raise ValueError(f"config.concepts.num_concepts: expected a whole number >= 2, got {count!r}")
  vectors = concepts.vectors
  if vectors not in VECTOR_CHOICES:
    raise ValueError(
      f"config.concepts.vectors: expected one of {', '.join(VECTOR_CHOICES)}, got {vectors!r}"
    )
  labels = concepts.labels
  if not isinstance(labels, str) or labels not in LABEL_CHOICES:
    raise ValueError(
      f"config.concepts.labels: expected one of {', '.join(map(repr, LABEL_CHOICES))} ('' is "
      f"{OFFICIAL_LABELS!r} with official concept files and a WordNet), got {labels!r}"
    )
  wordnet = concepts.wordnet
  if not isinstance(wordnet, str):
    raise ValueError(
      f"config.concepts.wordnet: expected a string (a folder or ''), got {wordnet!r}"
    )
  if labels == OFFICIAL_LABELS and not wordnet:
    raise ValueError(
      f"config.concepts.wordnet: the {OFFICIAL_LABELS!r} labels lemmatise with WordNet; give "
      "the folder of its index.noun and noun.exc (e.g. /usr/share/wordnet of Debian's "
      "wordnet-base)"
    )


def check_text_input(config: Any, dataset: DatasetInfo) -> None:
  """The network reads the dataset's images (an image folder's pixels only by a network of
  pixel towers, :attr:`!jitr.models.Network.tower_inputs`, which reads an image folder or
  jitr_shapes' rendered scenes) and captions
  (:attr:`!DatasetInfo.text_input`: word ids or text vectors), a dataset of text vectors has
  no vocabulary file, and regions are dropped only for a network that reads them
  (``image_mask``)."""
  name, network = network_of(config.model)
  reads_pixels = name in pixel_networks()
  if dataset.pixels and not reads_pixels:
    raise ValueError(
      f"config.model.name: {config.dataset} is an image folder, read as pixels by "
      f"{pixel_networks()}; got {name!r}"
    )
  if reads_pixels and not (dataset.pixels or dataset.rendered):
    raise ValueError(
      f"config.dataset: the {name!r} network reads images as pixels, from an image folder "
      f"(NAME_images with config.karpathy) or jitr_shapes' renders; {config.dataset} gives "
      "features"
    )
  if config.image.region_drop and "image_mask" not in network.inputs:
    raise ValueError(
      f"config.image.region_drop: the {name!r} network reads no image regions; expected 0"
    )
  if dataset.text_input not in network.inputs:
    readers = sorted(n for n, net in MODELS.items() if dataset.text_input in net.inputs)
    raise ValueError(
      f"config.model.name: {config.dataset}'s captions are {dataset.text_input!r}, which the "
      f"{name!r} network does not read; expected one of {readers}"
    )
  if dataset.text_input != "tokens" and config.vocab_file:
    raise ValueError(
      f"config.vocab_file: expected '' for {config.dataset} (text vectors, no words)"
    )
