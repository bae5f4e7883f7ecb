"""The batch keys of stored relevance data, of class labels and of caption chunks, defined once.

:func:`jitr.data.pairs.make_batch` writes them and :mod:`jitr.training` reads them
(the graded sources, the in-batch positives); both name a key only through these
functions and constants. ``NAME`` is an estimator's
registry name (``sentence``, ``lsa``, ``cider``, ``tokens``) or a teacher's workdir as
written in the graded source (it may hold ``/`` and ``:``).

>>> vectors_keys("lsa")
('vectors/lsa/captions', 'vectors/lsa/references')
>>> teacher_keys("runs/vse:2")
('teacher/runs/vse:2/images', 'teacher/runs/vse:2/captions')
"""

from __future__ import annotations


def vectors_keys(estimator: str) -> tuple[str, str]:
  """``(captions, references)`` keys of a vectors estimator: ``[B, D]`` the vector of each
  row's caption, ``[B, R, D]`` the vectors of each row's image's R reference captions."""
  return f"vectors/{estimator}/captions", f"vectors/{estimator}/references"


def topk_keys(estimator: str) -> tuple[str, str]:
  """``(indices, scores)`` keys of an estimator's top-K lists: ``[B, K]`` the caption
  indices and raw scores of the K best captions of each row's image."""
  return f"topk/{estimator}/indices", f"topk/{estimator}/scores"


def teacher_keys(workdir: str) -> tuple[str, str]:
  """``(images, captions)`` keys of a teacher's embeddings: ``[B, D]`` the embedding of
  each row's image and ``[B, D]`` of each row's caption."""
  return f"teacher/{workdir}/images", f"teacher/{workdir}/captions"


TEXT_VECTORS = "text_vectors"
"""``[B, D_txt]`` each row's text as a vector (a labelled vector dataset's captions)."""

CLASS_LABELS = "class_labels"
"""bool ``[B, C]`` the classes of each row's image (and text): what the ``labels`` graded
source reads."""

POSITIVE_CLASSES = "positive_classes"
"""bool ``[B, C]`` the classes that make two rows positives of each other: rows sharing one
are positives (``config.labelled.positives = "class"``); without the key, only the rows of
one image are."""

TOKEN_CHUNKS = "token_chunks"
"""The prefix of a training batch's caption chunks ``token_chunks/c`` ``[B/k, L_c]``
(``config.token_chunks = k``, :mod:`!jitr.data.token_chunks`)."""


def token_chunk_key(chunk: int) -> str:
  """The batch key of chunk ``chunk`` of the captions' tokens."""
  return f"{TOKEN_CHUNKS}/{chunk}"
