"""A run's data: its splits, vocabulary, exact relevance and the stored relevance it trains on.

:func:`load_data` reads ``config.dataset`` through the :class:`DataSource` of its kind
(:mod:`jitr.experiment.data_sources`): the built-in jitr_shapes TFDS dataset (built under
``data_dir`` on first use), a ``*_precomp`` folder or a folder of labelled vectors. The
training split carries the relevance records of every graded source
(:mod:`jitr.experiment.stored_relevance`) and, when asked, the teachers' embeddings
(:mod:`jitr.experiment.teachers`). What every source builds the data with
(:class:`LoadedData`, :func:`run_vocab`, :func:`encode_captions`, ...) is
:mod:`jitr.experiment.data_sources.loading`'s, named here too.
"""

from __future__ import annotations

from jitr.experiment.data_sources import data_source
from jitr.experiment.data_sources.loading import (
  SPLITS,
  LoadedData,
  encode_captions,
  run_vocab,
  say_nothing,
  shown,
  train_words,
  with_concepts,
)
from jitr.experiment.teachers import with_teachers

__all__ = [
  "SPLITS",
  "LoadedData",
  "encode_captions",
  "load_data",
  "run_vocab",
  "say_nothing",
  "shown",
  "train_words",
  "with_concepts",
]


def load_data(
  config, data_dir: str, *, teachers: bool = True, vocab=None, say=say_nothing
) -> LoadedData:
  """The :class:`LoadedData` of ``config.dataset``. ``teachers=False`` leaves out the
  ``teacher:`` embeddings (only training reads them; evaluation needs no teacher);
  ``vocab`` replaces the run's own vocabulary (``run_vocab``). ``say(text)`` gets one
  short line per phase (loading, building the vocabulary, the stored relevance, encoding
  the captions), and with it a build of jitr_shapes or of relevance records draws its
  progress line; by default nothing is said."""
  return data_source(config.dataset).load(
    config, data_dir, teachers=with_teachers if teachers else None, vocab=vocab, say=say
  )
