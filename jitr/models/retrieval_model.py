"""One interface for every retrieval network: what training and evaluation see.

A :class:`RetrievalModel` is a frozen bundle of pure functions over a Flax
``variables`` dict (``{"params": ..., maybe "batch_stats": ...}``)::

    init(rng, batch) -> variables
    forward(variables, batch, *, train, rngs, axis_name) -> (ModelOutput, new_state)
    score(variables, images, captions, *, train, rngs, axis_name) -> (sim [Q, C], new_state)
    encode_images(variables, images, image_mask) -> representation     (eval mode)
    encode_captions(variables, tokens, lengths[, concept_labels]) -> representation

(``encode_images`` takes the image-side inputs the model declares, :data:`IMAGE_INPUTS`,
and ``encode_captions`` the others: the two-branch network's are ``images`` and
``text_vectors``.)

``batch`` holds ``images [B, R, F]``, ``image_mask [B, R]`` (optional), ``tokens [B, L]``
and ``lengths [B]``; row ``b`` is pair ``b`` (its image and its caption). A
*representation* is any pytree with rows first: an embedding ``[B, E]`` (dual encoders,
``pairwise=False``, ``sim = img @ txt.T``) or ``(regions, mask)`` / ``(words, mask)``
(similarity models, ``pairwise=True``, ``score`` runs cross-attention on every pair).
A network reads the batch keys :attr:`!RetrievalModel.inputs` names (:data:`INPUTS` for
most; CVSE adds its ``concept_labels``): the train step gathers every other key of the
batch (ids, validity, relevance data) as the queries' fields. ``new_state`` is the
mutated non-param collections (``{}`` when none): running BatchNorm statistics.
``axis_name`` is the data-parallel axis the batch is split over (``None``: one device);
the models make their ``new_state`` identical on every device (sync BatchNorm; SAF's
per-caption moments gathered), so the step's ``pmean`` of it is exact.
``ModelOutput.aux_losses`` are per-row auxiliary losses ``{name: [B]}`` (VSRN's caption
NLL per pair) that the step adds with weight ``aux_weights[name]``.

Each network's package (:mod:`!jitr.models.vse`, :mod:`!jitr.models.sgraf`,
:mod:`!jitr.models.vsrn`, :mod:`!jitr.models.cvse`, ...) holds its adapter to this interface
(:func:`~jitr.models.dual_encoder_model`, :func:`~jitr.models.sgraf_model`,
:func:`~jitr.models.vsrn_model`, :func:`~jitr.models.cvse_model`) and a :class:`Network`
(its ``network.py``): how the registry builds it from a config, what it declares it needs,
the text it reads and the format of its official checkpoint.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

Batch = Mapping[str, jax.Array]
Variables = Mapping[str, Any]

INPUTS = ("images", "image_mask", "tokens", "lengths")
"""The batch keys every network reads: the default of :attr:`!RetrievalModel.inputs`."""

IMAGE_INPUTS = ("images", "image_mask")
"""The image-side batch keys (what ``encode_images`` takes, of those a model declares);
every other declared key is an input of ``encode_captions``."""


class ModelOutput(NamedTuple):
  """The device's rows' representations and per-row auxiliary losses ``{name: [B]}``."""

  images: Any
  captions: Any
  aux_losses: Mapping[str, jax.Array]


@dataclasses.dataclass(frozen=True)
class RetrievalModel:
  """The functions training and evaluation call (module docstring for the signatures)."""

  pairwise: bool
  init: Callable[[jax.Array, Batch], dict]
  forward: Callable[..., tuple[ModelOutput, dict]]
  score: Callable[..., tuple[jax.Array, dict]]
  encode_images: Callable[[Variables, jax.Array, jax.Array | None], Any]
  encode_captions: Callable[[Variables, jax.Array, jax.Array], Any]
  aux_weights: Mapping[str, float] = dataclasses.field(default_factory=dict)
  module: nn.Module | None = None
  """The underlying Flax module (for converters and inspection; training never uses it)."""
  complete_caption_labels: Callable[[Any, Any, np.ndarray], np.ndarray] | None = None
  """Evaluation's second pass, for models whose captions take concept labels (CVSE):
  ``(image reps, caption reps, labels [N_cap, C]) -> labels'`` from a first encoding;
  the split's captions are then encoded again with ``labels'``."""
  inputs: tuple[str, ...] = INPUTS
  """The batch keys ``init`` / ``forward`` read as the model's inputs (the rows'
  images and captions and whatever else the network takes per row); the train step
  treats every other key as a query field (ids, validity, relevance data)."""
  eval_similarity: Callable[[Any, Any], Any] | None = None
  """A dual encoder's score of two evaluation representations (``encode_images`` rows
  against ``encode_captions`` rows, ``[N_img, N_cap]``) when it is not their dot product
  (CVSE: the official mix of its fused and consensus parts). Written with array operators
  alone, it scores on the devices (float32) and, for the official protocol, on the host
  in float64; ``None``: the dot product."""
  learned: tuple[str, ...] = ()
  """The loss hyper-parameters the model learns (CLIP's ``logit_scale``, SigLIP's
  ``logit_bias``): what an objective term set to ``"learned"`` reads."""
  learned_hyper: Callable[[Any], Mapping[str, jax.Array]] | None = None
  """``params -> {name: value}`` of :attr:`learned` (differentiable in ``params``);
  ``None`` when it learns none."""
  layer_ranks: Callable[[Any], Any] | None = None
  """``params -> the same tree of ints``: how many layers each parameter lies below the
  output (:func:`!jitr.models.clip.layer_ranks.layer_ranks`), for layer-wise
  learning-rate decay (``config.optimizer.layer_decay``); ``None``: the network declares
  no layers, and takes no layer decay."""


Builder = Callable[[dict[str, Any], int, Mapping[str, Any]], RetrievalModel]
"""``(model config without its name, vocab_size, dataset constants) -> RetrievalModel``."""


@dataclasses.dataclass(frozen=True)
class Network:
  """A registered network: ``Network(config, vocab_size, constants)`` builds it, and it
  declares, before any model is built, what it needs besides a config."""

  build: Builder
  """The builder: the config's keys (``name`` removed) are its settings; ``constants``
  holds the dataset constants :attr:`!constants` names (other keys are ignored)."""
  inputs: tuple[str, ...] = INPUTS
  """The batch keys the built model reads (its :attr:`!RetrievalModel.inputs`)."""
  constants: tuple[str, ...] = ()
  """The dataset constants the builder needs, by name (``"concepts"``: CVSE's
  :class:`~jitr.models.ConceptInputs`)."""
  settings_of: Callable[..., Any] | None = None
  """The callable whose keyword arguments are the network's settings
  (:mod:`!jitr.models.model_settings`)."""
  extra_settings: Mapping[str, Any] = dataclasses.field(default_factory=dict)
  """Settings the builder takes besides those keyword arguments, with their defaults."""
  token_chunks: bool = False
  """Whether ``forward`` takes ``tokens`` as a tuple of row chunks, each padded to its own
  width (a network that encodes each caption alone,
  :func:`!jitr.models.common.encode_row_chunks`; ``config.token_chunks``)."""
  pairwise: bool = False
  """Whether its model scores each (image, caption) pair itself (``RetrievalModel.pairwise``:
  a similarity model), not the embeddings' dot products."""
  wordpiece: bool = False
  """Whether its captions are WordPiece ids of the BERT folder ``config.text.pretrained``,
  whose BERT it builds (the run gives the folder as its ``pretrained`` setting); ``False``:
  ids of a word vocabulary, or no words at all (text vectors)."""
  official: Any = None
  """The format of its official checkpoint (``jitr-import``), a
  :class:`!jitr.models.official_format.OfficialFormat`; ``None``: none is read."""
  tower_inputs: Callable[[Mapping[str, Any]], Any] | None = None
  """``config.model -> TowerInputs`` for a network of pixel towers (``"clip"``,
  :class:`!jitr.models.clip.network.TowerInputs`): the image size and preprocessing of its
  images, the tokenizer and context length of its captions; ``None``: it reads features
  and a word (or WordPiece) vocabulary's ids."""
  fresh_params: Mapping[str, str] = dataclasses.field(default_factory=dict)
  """``{params key: what it is}``: the parts of its parameters a run may start fresh when
  the workdir it starts from (``config.init_from``) has none (VSRN's caption decoder,
  which official VSRN checkpoints do not hold)."""

  def __call__(
    self, config: Mapping[str, Any], vocab_size: int, constants: Mapping[str, Any] | None = None
  ) -> RetrievalModel:
    """The network's :class:`RetrievalModel`; ``constants``: the dataset constants by
    name (``None``: none)."""
    model = self.build(dict(config), vocab_size, dict(constants or {}))
    if tuple(model.inputs) != tuple(self.inputs):  # the declaration must be the model's
      raise ValueError(f"Network: declares inputs {self.inputs}, its model reads {model.inputs}")
    if model.pairwise != self.pairwise:
      raise ValueError(
        f"Network: declares pairwise={self.pairwise}, its model has {model.pairwise}"
      )
    return model


def require_constants(
  name: str, network: str, needed: Mapping[str, str], constants: Mapping[str, Any]
) -> None:
  """Raises ``ValueError`` (one line naming the first missing one) unless ``constants``
  holds every constant of ``needed`` (``{constant: what it is}``) that network ``name``
  (shown as ``network``) needs."""
  for key, what in needed.items():
    if constants.get(key) is None:
      raise ValueError(
        f"config.model (name={name!r}): {network} needs the dataset's {key} ({what}): "
        f"make_model(config, vocab_size, {{{key!r}: ...}})"
      )


def similarity(img: jax.Array, txt: jax.Array) -> jax.Array:
  """Cosine similarity matrix ``img @ txt.T`` ``[B_img, B_txt]`` (inputs L2-normalised)."""
  return jnp.einsum("ie,te->it", img.astype(jnp.float32), txt.astype(jnp.float32))


def image_mask_of(batch: Batch) -> jax.Array:
  """The batch's ``image_mask``; all valid when it has none."""
  mask = batch.get("image_mask")
  return jnp.ones(batch["images"].shape[:2], bool) if mask is None else mask


def split_variables(variables: Variables) -> tuple[Any, dict]:
  """``(params, the other collections)``."""
  return variables["params"], {k: v for k, v in variables.items() if k != "params"}


def dot_score(variables, images, captions, *, train=False, rngs=None, axis_name=None):
  """The dual encoders' score: ``s_ij = <img_i, txt_j>`` in float32 (no variables)."""
  del variables, train, rngs, axis_name
  return similarity(images, captions), {}


def _mutable(train: bool) -> list[str] | bool:
  return ["batch_stats"] if train else False


def apply_collections(module, variables, *args, train, rngs, method):
  """``module.apply`` that returns ``(out, mutated collections)`` in both modes."""
  out = module.apply(variables, *args, rngs=rngs, method=method, mutable=_mutable(train))
  return out if train else (out, {})
