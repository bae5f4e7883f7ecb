"""VSE∞ behind the one :class:`~jitr.models.RetrievalModel` interface, and the registry's
builder (``config.model.name = "vseinf"``: :func:`create_vseinf`'s keywords).

The batch's ``tokens`` are WordPiece ids with ``[CLS]`` / ``[SEP]`` (0 = padding) and
``lengths`` their counts. ``pretrained``: a Hugging Face BERT folder (``config.json`` and
the weights, e.g. bert-base-uncased) whose weights ``init`` puts in ``params["bert"]``;
``""`` builds a randomly initialised BERT of the ``bert_*`` sizes (vocabulary
``vocab_size``). The other parameters start as the official code starts them.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp

from jitr.models.bert import BertConfig, load_pretrained
from jitr.models.dual_encoder import dual_encoder
from jitr.models.retrieval_model import (
  ModelOutput,
  RetrievalModel,
  apply_collections,
)
from jitr.models.vseinf.init import torch_gpo_params
from jitr.models.vseinf.model import VSEInfinity

# the run config's field that names the BERT folder (a run's config.model has no
# ``pretrained``: jitr.experiment.model_state passes config.text.pretrained as it)
PRETRAINED_FIELD = "config.text.pretrained"


def vseinf_model(module: VSEInfinity, bert_params: Any | None = None) -> RetrievalModel:
  """The :class:`RetrievalModel` of ``module``; ``bert_params`` (``None``: random) replace
  the BERT subtree of ``init``'s parameters, whose GPOs start as PyTorch's ``nn.GRU`` and
  ``nn.Linear`` (:func:`~jitr.models.vseinf.init.torch_gpo_params`)."""

  def init(rng, batch):
    params_key, dropout_key, gpo_key = jax.random.split(rng, 3)
    variables = dict(
      module.init(
        {"params": params_key, "dropout": dropout_key},
        batch["images"],
        batch["tokens"],
        batch["lengths"],
        batch.get("image_mask"),
      )
    )
    params = dict(variables["params"])
    for tower, key in zip(("image_encoder", "text_encoder"), jax.random.split(gpo_key)):
      gpool = torch_gpo_params(key, params[tower]["gpool"])
      params[tower] = {**params[tower], "gpool": gpool}
    if bert_params is not None:
      params["bert"] = _same_tree(variables, bert_params)
    variables["params"] = params
    return variables

  def forward(variables, batch, *, train=True, rngs=None, axis_name=None):
    args = (batch["images"], batch["tokens"], batch["lengths"], batch.get("image_mask"))
    (img, txt), state = apply_collections(
      module.clone(axis_name=axis_name),
      variables,
      *args,
      train=train,
      rngs=rngs,
      method=lambda m, *a: m(*a, train=train),
    )
    return ModelOutput(img, txt, {}), state

  return dual_encoder(module, init, forward)


def _same_tree(variables: dict, bert_params: Any) -> Any:
  """``bert_params`` as float32 arrays, refused in one line unless its tree and shapes are
  those of the module's BERT."""
  want = jax.tree.map(jnp.shape, variables["params"]["bert"])
  got = jax.tree.map(jnp.shape, bert_params)
  if want != got:
    raise ValueError("vseinf: the pretrained BERT's parameters do not fit the module's BERT")
  return jax.tree.map(lambda x: jnp.asarray(x, jnp.float32), bert_params)


@dataclasses.dataclass(frozen=True)
class VSEInfSettings:
  """VSE∞'s settings (``config.model`` of ``"vseinf"``; the run gives ``pretrained``).

  ``pretrained``: a Hugging Face BERT folder (its ``config.json`` sets the BERT, the
  ``bert_*`` sizes are then unused); ``""``: a random BERT of hidden ``bert_hidden``,
  ``bert_layers`` layers of ``bert_heads`` heads and feed-forward ``bert_intermediate``
  (bert-base-uncased: 768, 12, 12, 3072). ``bert_dropout``: the BERT's hidden and attention
  dropout in training (either BERT). ``dtype``: the BERT's computation dtype
  (``"bfloat16"`` or a JAX dtype); ``remat``: rematerialise its layers.
  """

  embed_dim: int = 1024
  img_dim: int = 2048
  pretrained: str = ""
  bert_hidden: int = 768
  bert_layers: int = 12
  bert_heads: int = 12
  bert_intermediate: int = 3072
  bert_dropout: float = 0.1
  dtype: Any = jnp.float32
  remat: bool = False


def create_vseinf(*, vocab_size: int, **settings: Any) -> tuple[VSEInfinity, Any | None]:
  """``(VSEInfinity, pretrained BERT params or None)``: ``settings`` are
  :class:`VSEInfSettings`' fields (:func:`vseinf_of`); a random BERT's vocabulary is
  ``vocab_size`` (bert-base-uncased: 30522)."""
  return vseinf_of(VSEInfSettings(**settings), vocab_size)


def bert_of(settings: VSEInfSettings, vocab_size: int) -> tuple[BertConfig, Any | None]:
  """``(BertConfig, pretrained params or None)``: the folder's BERT, or a random one of the
  ``bert_*`` sizes; a folder whose BERT embeds fewer ids than ``vocab_size`` is refused."""
  if not settings.pretrained:
    sizes = (settings.bert_hidden, settings.bert_layers, settings.bert_heads)
    return BertConfig(vocab_size, *sizes, settings.bert_intermediate), None
  try:
    config, params = load_pretrained(settings.pretrained)
  except (OSError, ValueError) as e:  # load_pretrained's one-line refusals
    raise ValueError(f"{PRETRAINED_FIELD}: {e}") from e
  if vocab_size > config.vocab_size:
    raise ValueError(
      f"{PRETRAINED_FIELD}: the vocabulary has {vocab_size} ids, the BERT of "
      f"{settings.pretrained!r} embeds {config.vocab_size}"
    )
  return config, params


def vseinf_of(settings: VSEInfSettings, vocab_size: int) -> tuple[VSEInfinity, Any | None]:
  """``(VSEInfinity, pretrained BERT params or None)`` of ``settings``."""
  config, params = bert_of(settings, vocab_size)
  dropout = settings.bert_dropout
  config = dataclasses.replace(
    config, hidden_dropout_prob=dropout, attention_probs_dropout_prob=dropout
  )
  module = VSEInfinity(
    config,
    embed_dim=settings.embed_dim,
    img_dim=settings.img_dim,
    dtype=jnp.dtype(settings.dtype),
    remat=settings.remat,
  )
  return module, params


def build(config: dict[str, Any], vocab_size: int, constants: Any) -> RetrievalModel:
  """The registry's builder: ``config``'s keys are :func:`create_vseinf`'s."""
  del constants  # VSE∞ reads no dataset constants
  return vseinf_model(*create_vseinf(vocab_size=vocab_size, **config))
