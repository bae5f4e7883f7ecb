"""A run's data: its splits, vocabulary, exact relevance and the stored relevance it trains on.

:func:`load_data` reads ``config.dataset`` through the loader of its kind
(:data:`LOADERS`, keyed by :attr:`jitr.data.datasets.DatasetInfo.kind`): the built-in
jitr_shapes TFDS dataset (built under ``data_dir`` on first use), a ``*_precomp``
folder or a folder of labelled vectors. The training split carries the relevance records
of every graded source (:mod:`jitr.experiment.stored_relevance`) and, when asked, the
teachers' embeddings (:mod:`jitr.experiment.teachers`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

import numpy as np

from jitr.data import pairs, precomp
from jitr.data import vocab as vocab_lib
from jitr.data.caption_forms import caption_forms
from jitr.data.concept_data import ConceptData
from jitr.data.datasets import captions_per_image, dataset_info
from jitr.data.labelled import LabelledSettings
from jitr.data.labelled_splits import labelled_splits
from jitr.data.official_vocab import read_vocab_file
from jitr.data.shapes import split as shapes_split
from jitr.data.wordpiece_vocab import CaptionWords, WordPieceVocab
from jitr.experiment.run_caption_form import caption_form
from jitr.experiment.run_concepts import (
  needs_concepts,
  per_image,
  run_concepts,
  with_concept_labels,
)
from jitr.experiment.run_tokenizer import built_tokenizer, check_vocab_tokenizer
from jitr.experiment.stored_relevance import caption_set, stored_relevance
from jitr.experiment.teachers import with_teachers

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
  ``None``. The vocabulary is ``given``, else the WordPiece vocabulary of
  ``config.text.pretrained``'s ``vocab.txt`` when set, else
  ``config.vocab_file`` when set (jitr's ``vocab.json`` or an official file, e.g. an
  imported checkpoint's; refused in one line when ``config.text.tokenizer`` names another
  tokenizer than its own), else built from ``train_captions`` by the run's tokenizer
  (:func:`jitr.experiment.run_tokenizer.built_tokenizer`), keeping the words seen at least
  ``min_count`` times (``say``: the line saying so)."""
  if given is not None:
    return given, None
  if config.text.pretrained:
    try:
      return WordPieceVocab.from_folder(config.text.pretrained), None
    except (OSError, ValueError) as err:
      raise ValueError(f"config.text.pretrained: {err}") from None
  path = config.vocab_file
  if not path:
    say("building the vocabulary")
    tokenizer = built_tokenizer(config)
    words = vocab_lib.tokenize_all(train_captions, tokenizer)
    return vocab_lib.vocab_from_tokens(words, min_count=min_count, tokenizer=tokenizer), words
  try:
    vocab = read_vocab_file(path)
  except (OSError, ValueError) as err:
    raise ValueError(f"config.vocab_file: {err}") from None
  check_vocab_tokenizer(config, vocab, f"config.vocab_file {path}")
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


def load_shapes(
  config, data_dir: str, *, teachers: bool = True, vocab=None, say=say_nothing
) -> LoadedData:
  """jitr_shapes (``config.shapes_config``), built under ``data_dir`` if absent."""
  from jitr.data.shapes import tfds as shapes_tfds

  shapes_tfds.build(data_dir, config.shapes_config, progress=shown(say) is not None)
  say(f"loading jitr_shapes/{config.shapes_config}")
  arrays = {
    s: shapes_tfds.load_split(s, data_dir=data_dir, config=config.shapes_config, images=False)
    for s in SPLITS
  }
  texts = {s: caption_forms(a["captions"], caption_form(config)) for s, a in arrays.items()}
  vocab, train_tokens = run_vocab(config, texts["train"], vocab, say=say)
  captions = caption_set(arrays["train"]["captions"], 5, _train_source(config))
  vectors, topk, aggregates = stored_relevance(captions, config, data_dir, say=shown(say))
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
  if teachers:
    splits = with_teachers(config, splits, vocab, captions, data_dir)
  exact = {
    s: shapes_tfds.split_relevance(s, data_dir=data_dir, config=config.shapes_config)
    for s in ("val", "test")
  }
  captions = {s: a["captions"] for s, a in arrays.items()}
  words = train_words(config, vocab, list(captions["train"]))
  return with_concepts(
    config, LoadedData(splits, vocab, exact, aggregates, None, None, words), captions, data_dir
  )


def load_precomp(
  config, data_dir: str, *, teachers: bool = True, vocab=None, say=say_nothing
) -> LoadedData:
  """A ``<precomp_root>/<dataset>/`` folder: train, dev (validation), ``config.test_split``."""
  folder = precomp.precomp_dir(config.precomp_root, config.dataset.removesuffix("_precomp"))
  per_image = captions_per_image(dataset_info(config.dataset), config.captions_per_image)
  say(f"loading {folder}")
  raw = {
    name: precomp.load_precomp_split(folder, split, captions_per_image=per_image)
    for name, split in zip(SPLITS, ("train", "dev", config.test_split), strict=True)
  }
  texts = {name: caption_forms(split.captions, caption_form(config)) for name, split in raw.items()}
  vocab, train_tokens = run_vocab(
    config, texts["train"], vocab, min_count=config.vocab_min_count, say=say
  )
  train = raw["train"]
  captions = caption_set(train.captions, train.captions_per_image, _train_source(config))
  vectors, topk, aggregates = stored_relevance(captions, config, data_dir, say=shown(say))
  say("encoding the captions")
  splits = {}
  for name, split in raw.items():
    tokens, lengths = encode_captions(
      vocab, texts[name], config.max_caption_len, train_tokens if name == "train" else None
    )
    splits[name] = pairs.RetrievalSplit(
      images=split.images,
      tokens=tokens,
      lengths=lengths,
      caption_image=split.caption_image_index(),
      vectors=vectors if name == "train" else {},
      topk=topk if name == "train" else {},
    )
  if teachers:
    splits = with_teachers(config, splits, vocab, captions, data_dir)
  words = train_words(config, vocab, list(train.captions))
  data = LoadedData(splits, vocab, None, aggregates, config.eval_folds or None, None, words)
  return with_concepts(config, data, {n: s.captions for n, s in raw.items()}, data_dir)


def load_labelled(
  config, data_dir: str, *, teachers: bool = True, vocab=None, say=say_nothing
) -> LoadedData:
  """A folder of image vectors, text vectors and class labels (``config.labelled``,
  :mod:`jitr.data.labelled_splits`): no words (a vocabulary of the special tokens), no
  stored relevance, no teacher."""
  del data_dir, teachers
  say(f"loading {config.labelled.folder}")
  layout = dataset_info(config.dataset).labelled
  splits = labelled_splits(LabelledSettings.of(config.labelled), layout)
  vocab = vocab if vocab is not None else vocab_lib.Vocab(vocab_lib.SPECIAL_TOKENS)
  return LoadedData(splits, vocab, None, {}, None)


# DatasetInfo.kind -> its loader
LOADERS: dict[str, Callable[..., LoadedData]] = {
  "shapes": load_shapes,
  "precomp": load_precomp,
  "labelled": load_labelled,
}


def _train_source(config) -> str:
  """The training captions' source name, e.g. ``jitr_shapes/default/train``: the key of
  their relevance records and teacher embeddings."""
  return f"{dataset_info(config.dataset).data_name(config)}/train"


def load_data(
  config, data_dir: str, *, teachers: bool = True, vocab=None, say=say_nothing
) -> LoadedData:
  """The :class:`LoadedData` of ``config.dataset``. ``teachers=False`` leaves out the
  ``teacher:`` embeddings (only training reads them; evaluation needs no teacher);
  ``vocab`` replaces the run's own vocabulary (``run_vocab``). ``say(text)`` gets one
  short line per phase (loading, building the vocabulary, the stored relevance, encoding
  the captions), and with it a build of jitr_shapes or of relevance records draws its
  progress line; by default nothing is said."""
  return LOADERS[dataset_info(config.dataset).kind](
    config, data_dir, teachers=teachers, vocab=vocab, say=say
  )
