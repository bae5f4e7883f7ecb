"""The built-in jitr_shapes dataset as a :class:`DataSource`: a TFDS dataset generated under
``data_dir`` on first use (``config.shapes_config``), with exact relevance; being
generated, it pins no file."""

from __future__ import annotations

import dataclasses

import numpy as np

from jitr.data import pairs
from jitr.data.caption_forms import caption_forms
from jitr.data.datasets import DatasetInfo, captions_per_image
from jitr.data.image_files import image_arrays
from jitr.data.shapes import split as shapes_split
from jitr.experiment.data_sources.loading import (
  SPLITS,
  LoadedData,
  encode_captions,
  run_vocab,
  shown,
  train_relevance,
  train_source,
  train_words,
  with_concepts,
)
from jitr.experiment.data_sources.source import DataSource
from jitr.experiment.run_caption_form import caption_form
from jitr.experiment.run_tower import reads_pixels, tower_inputs
from jitr.experiment.stored_relevance import caption_set
from jitr.relevance.captions_io import CaptionSet, precomp_caption_set


def rendered(config, split: pairs.RetrievalSplit, images: np.ndarray) -> pairs.RetrievalSplit:
  """``split`` with its rendered scenes ``[N, 64, 64, 3]`` as the images of
  ``config.model``'s pixel towers (:class:`!jitr.data.image_files.ImageArrays`: their
  evaluation transform, or open_clip's training crop, per batch), no regions."""
  inputs = tower_inputs(config)
  pixels = image_arrays(images, inputs.image_size, inputs.preprocessing)
  return dataclasses.replace(split, images=pixels, image_mask=None)


class ShapesSource(DataSource):
  """jitr_shapes: ``config.shapes_config``'s splits ``train``, ``val``, ``test``."""

  kind = "shapes"

  def load(self, config, data_dir, *, teachers, vocab, say) -> LoadedData:
    """jitr_shapes (``config.shapes_config``), built under ``data_dir`` if absent, with the
    exact relevance of its val and test splits."""
    from jitr.data.shapes import tfds as shapes_tfds

    shapes_tfds.build(data_dir, config.shapes_config, progress=shown(say) is not None)
    say(f"loading jitr_shapes/{config.shapes_config}")
    pixels = reads_pixels(config)  # the rendered scenes instead of the region features
    arrays = {
      s: shapes_tfds.load_split(s, data_dir=data_dir, config=config.shapes_config, images=pixels)
      for s in SPLITS
    }
    texts = {s: caption_forms(a["captions"], caption_form(config.text)) for s, a in arrays.items()}
    vocab, train_tokens = run_vocab(config, texts["train"], vocab, say=say)
    captions = caption_set(arrays["train"]["captions"], 5, train_source(config))
    vectors, topk, aggregates = train_relevance(config, captions, data_dir, say)
    say("encoding the captions")
    splits = {
      s: shapes_split.retrieval_split(
        a,
        vocab,
        encoded=encode_captions(
          vocab, texts[s], config.max_caption_len, train_tokens if s == "train" else None
        ),
        vectors=vectors if s == "train" else None,
        topk=topk if s == "train" else None,
      )
      for s, a in arrays.items()
    }
    if pixels:
      splits = {s: rendered(config, split, arrays[s]["image"]) for s, split in splits.items()}
    if teachers is not None:
      splits = teachers(config, splits, vocab, captions, data_dir)
    exact = {
      s: shapes_tfds.split_relevance(s, data_dir=data_dir, config=config.shapes_config)
      for s in ("val", "test")
    }
    captions = {s: a["captions"] for s, a in arrays.items()}
    words = train_words(config, vocab, list(captions["train"]))
    return with_concepts(
      config, LoadedData(splits, vocab, exact, aggregates, None, None, words), captions, data_dir
    )

  def check_config(self, config, dataset: DatasetInfo) -> None:
    """The test split and captions per image (:meth:`DataSource.check_config`), the latter
    jitr_shapes' own or 0."""
    super().check_config(config, dataset)
    count = captions_per_image(dataset, config.captions_per_image)
    if count != dataset.captions_per_image:
      raise ValueError(
        f"config.captions_per_image: {dataset.name} has {dataset.captions_per_image} captions "
        f"per image; expected 0 or {dataset.captions_per_image}, got {count}"
      )

  def split_captions(self, config, data_dir: str, split: str) -> tuple[str, CaptionSet]:
    """``(split, captions)``: the split's captions, read from the dataset under
    ``data_dir``, with the source ``jitr_shapes/<shapes_config>/<split>``."""
    from jitr.data.shapes import tfds as shapes_tfds

    texts = shapes_tfds.load_split(
      split, data_dir=data_dir, config=config.shapes_config, images=False
    )["captions"]
    return split, precomp_caption_set(texts, 5, f"jitr_shapes/{config.shapes_config}/{split}")
