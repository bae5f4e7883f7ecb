"""What every kind of dataset builds a run's data with: :class:`LoadedData`, the run's
vocabulary, the captions' encoding, the training captions' words and source name, and the
concepts of a network that reads them."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

import numpy as np

from jitr.data import pairs
from jitr.data import vocab as vocab_lib
from jitr.data.concept_data import ConceptData
from jitr.data.official_vocab import read_vocab_file
from jitr.data.wordpiece_vocab import CaptionWords, WordPieceVocab
from jitr.experiment.data_sources.naming import run_data_name
from jitr.experiment.run_concepts import (
  needs_concepts,
  per_image,
  run_concepts,
  with_concept_labels,
)
from jitr.experiment.run_tokenizer import built_tokenizer, check_vocab_tokenizer
from jitr.experiment.run_tower import reads_pixels, tower_vocab
from jitr.experiment.stored_relevance import stored_relevance
from jitr.relevance.captions_io import CaptionSet

# The names of a run's splits: validation is "val" whatever the dataset calls it.
SPLITS = ("train", "val", "test")


@dataclasses.dataclass(frozen=True)
class LoadedData:
  """What a run reads of its dataset.

  Attributes:
    splits: ``{"train" | "val" | "test": RetrievalSplit}``.
    vocab: the vocabulary built from the training captions (``config.vocab_file``'s when
      set), or the WordPiece vocabulary of ``config.text.pretrained``
      (:class:`!jitr.data.wordpiece_vocab.WordPieceVocab`) when set.
    exact: ``{"val" | "test": [N_img, N_cap]}`` exact relevance, or ``None`` where the
      dataset has none.
    aggregates: ``{estimator: "max" | "mean"}`` of the stored caption vectors (for
      ``make_graded_fn``).
    folds: the number of test folds (COCO 1K five-fold), or ``None``.
    concepts: the concepts of a network that reads them (CVSE), else ``None``; the
      splits then carry each image's ``concept_labels``.
    train_words: the training captions' words as WordPiece ids (what the training
      augmentation rewrites) when ``config.text.word_augment`` > 0, else ``None``.
  """

  splits: dict[str, pairs.RetrievalSplit]
  vocab: vocab_lib.Vocab
  exact: dict[str, np.ndarray] | None
  aggregates: dict[str, str]
  folds: int | None
  concepts: ConceptData | None = None
  train_words: CaptionWords | None = None


def with_concepts(config, data: LoadedData, captions: dict[str, list], data_dir: str):
  """``data`` with its concepts (:mod:`!jitr.experiment.run_concepts`) when
  ``config.model`` reads them; ``captions[split]`` the split's captions, in caption order."""
  if not needs_concepts(config):
    return data
  image_captions = {
    name: per_image(captions[name], split.caption_image, split.num_images)
    for name, split in data.splits.items()
  }
  concepts, own = run_concepts(config, image_captions, data_dir)
  splits = with_concept_labels(data.splits, concepts, own)
  return dataclasses.replace(data, splits=splits, concepts=concepts)


def say_nothing(text: str) -> None:
  """The default ``say`` of the loaders: writes nothing."""
  del text


def run_vocab(
  config,
  train_captions: Sequence[str],
  given: vocab_lib.Vocab | None = None,
  *,
  min_count: int = 1,
  say: Callable[[str], None] = say_nothing,
) -> tuple[vocab_lib.Vocab | WordPieceVocab, list[list[str]] | None]:
  """``(vocabulary, words)``: the run's vocabulary and, when it was built here, the words
  of ``train_captions`` (in the run's caption form, :mod:`jitr.experiment.run_caption_form`)
  it was built from (the training split is encoded from them, not tokenised again), else
  ``None``. The vocabulary is ``given``, else the text tower's tokenizer for a network
  of pixel towers (:func:`jitr.experiment.run_tower.tower_vocab`), else the WordPiece vocabulary of
  ``config.text.pretrained``'s ``vocab.txt`` when set, else
  ``config.vocab_file`` when set (jitr's ``vocab.json`` or an official file, e.g. an
  imported checkpoint's; refused in one line when ``config.text.tokenizer`` names another
  tokenizer than its own), else built from ``train_captions`` by the run's tokenizer
  (:func:`jitr.experiment.run_tokenizer.built_tokenizer`), keeping the words seen at least
  ``min_count`` times (``say``: the line saying so)."""
  if given is not None:
    return given, None
  if reads_pixels(config):
    return tower_vocab(config), None
  if config.text.pretrained:
    try:
      return WordPieceVocab.from_folder(config.text.pretrained), None
    except (OSError, ValueError) as err:
      raise ValueError(f"config.text.pretrained: {err}") from None
  path = config.vocab_file
  if not path:
    say("building the vocabulary")
    tokenizer = built_tokenizer(config.text)
    words = vocab_lib.tokenize_all(train_captions, tokenizer)
    return vocab_lib.vocab_from_tokens(words, min_count=min_count, tokenizer=tokenizer), words
  try:
    vocab = read_vocab_file(path)
  except (OSError, ValueError) as err:
    raise ValueError(f"config.vocab_file: {err}") from None
  check_vocab_tokenizer(config.text, vocab, f"config.vocab_file {path}")
  return vocab, None


def encode_captions(
  vocab, captions: Sequence[str], max_caption_len: int, words: list[list[str]] | None = None
) -> tuple[np.ndarray, np.ndarray]:
  """``(tokens [N, L], lengths [N])`` of ``captions``: a word vocabulary encodes ``words``
  (the captions' words by its tokenizer, from building it) or tokenises the captions once
  here; each caption is cut to :func:`jitr.data.vocab.caption_limit` (``max_caption_len``;
  uncut for the ``"nltk"`` tokenizer). A WordPiece vocabulary encodes the captions itself."""
  if not isinstance(vocab, vocab_lib.Vocab):
    return vocab.encode_batch(captions, max_len=max_caption_len)
  if words is None:
    words = vocab_lib.tokenize_all(captions, vocab.tokenizer)
  return vocab.encode_tokenized(words, max_len=vocab_lib.caption_limit(vocab, max_caption_len))


def train_words(config, vocab, captions: list[str]) -> CaptionWords | None:
  """The words of the training ``captions`` when ``config.text.word_augment`` > 0 (the
  vocabulary is then WordPiece: :func:`!jitr.experiment.run_config.check_train_config`),
  else ``None``."""
  if not config.text.word_augment:
    return None
  return CaptionWords.build(vocab.tokenizer, captions)


def shown(say: Callable[[str], None]) -> Callable[[str], None] | None:
  """``say``, or None for :func:`say_nothing`: a loader passes it on to the builds that
  draw their progress line only when lines are shown."""
  return None if say is say_nothing else say


def train_relevance(config, captions: CaptionSet, data_dir: str, say) -> tuple[dict, dict, dict]:
  """``(vectors, topk, aggregates)`` of the run's training ``captions``
  (:func:`~jitr.experiment.stored_relevance.stored_relevance`): the estimators its
  ``config.graded`` sources name, with ``config.estimators``' settings and
  ``config.top_k`` lists; ``say`` as a loader gets it (:func:`shown`)."""
  return stored_relevance(
    captions,
    config.graded,
    data_dir,
    estimators=config.estimators,
    top_k=config.top_k,
    say=shown(say),
  )


def train_source(config) -> str:
  """The training captions' source name, e.g. ``jitr_shapes/default/train``: the key of
  their relevance records and teacher embeddings."""
  return f"{run_data_name(config)}/train"
