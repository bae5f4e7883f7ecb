"""Hugging Face ``transformers.BertModel`` as the reference of :class:`jitr.models.BertEncoder`
(shared by the BERT tests): the same weights through :func:`jitr.models.bert_params`."""

import dataclasses

import jax
import numpy as np

from jitr.models import BertConfig, BertEncoder, bert_params


def hf_model(config: BertConfig, *, seed: int = 0):
  """A randomly initialised ``transformers.BertModel`` of ``config``'s shape, eval mode."""
  import torch
  import transformers

  torch.manual_seed(seed)
  return transformers.BertModel(transformers.BertConfig(**dataclasses.asdict(config))).eval()


def hf_hidden(model, input_ids, attention_mask, token_type_ids=None, *, double=False):
  """``BertModel``'s ``last_hidden_state`` as numpy (float64 weights and math if
  ``double``; the model is left as it was)."""
  import torch

  model = model.double() if double else model
  kwargs = {"input_ids": torch.tensor(input_ids), "attention_mask": torch.tensor(attention_mask)}
  if token_type_ids is not None:
    kwargs["token_type_ids"] = torch.tensor(token_type_ids)
  try:
    with torch.no_grad():
      return model(**kwargs).last_hidden_state.numpy()
  finally:
    model.float()


def hf_params(model, config: BertConfig) -> dict:
  """``model``'s state dict through the converter (float32 numpy params)."""
  return bert_params({k: v.numpy() for k, v in model.state_dict().items()}, config)


def jax_hidden(config, params, input_ids, attention_mask, token_type_ids=None, **module_kwargs):
  """:class:`BertEncoder` of ``config`` applied (jitted) to the batch, as numpy."""
  model = BertEncoder(config, **module_kwargs)
  apply = jax.jit(lambda p, i, m, t: model.apply({"params": p}, i, m, token_type_ids=t))
  return np.asarray(apply(params, input_ids, attention_mask, token_type_ids))


def padded_batch(lengths, max_length, vocab_size, *, seed=0, pad_noise=False):
  """``(input_ids, attention_mask)`` ``[B, max_length]`` int64: ``[CLS]``-like id 1 first,
  random ids after, padding id 0 (random ids too when ``pad_noise``: padding ids must not
  matter)."""
  rng = np.random.default_rng(seed)
  lengths = np.asarray(lengths)
  mask = (np.arange(max_length)[None, :] < lengths[:, None]).astype(np.int64)
  ids = rng.integers(2, vocab_size, (len(lengths), max_length))
  ids[:, 0] = 1
  return (ids if pad_noise else ids * mask), mask
