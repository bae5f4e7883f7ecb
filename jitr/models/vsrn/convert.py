"""Official VSRN (PyTorch) weights -> :class:`jitr.models.VSRN` variables.

The official ``train.py`` saves ``{'epoch', 'model': [img_enc, txt_enc] state_dicts,
'best_rsum', 'opt', 'Eiters'}``: the captioning branch (``caption_model``) is *not* in
the checkpoint. :func:`params_from_state_dict` takes one flat state dict with the
official attribute paths (``img_enc.fc.weight``, ``img_enc.Rs_GCN_1.g.weight``,
``img_enc.Rs_GCN_1.W.0.weight`` / ``W.1.running_mean``, ``img_enc.img_rnn.weight_ih_l0``,
``img_enc.bn.*`` (F30K), ``txt_enc.embed.weight``, ``txt_enc.rnn.weight_ih_l0``, and
optionally ``caption_model.encoder.{vid2hid, rnn}.*``, ``caption_model.decoder.{embedding,
attention.linear1, attention.linear2, rnn, out}.*``) and returns ``(params,
batch_stats)``; without ``caption_model`` keys the params have no ``caption_model``
entry (initialise it and merge). Linear ``[out, in]`` and 1×1 Conv1d ``[out, in, 1]``
weights become kernels ``[in, out]``; GRU ``weight_ih`` / ``weight_hh`` ``[3H, ·]``
(gates r, z, n) become :class:`jitr.models.gru.GRU`'s input / recurrent kernels;
BatchNorm ``weight, bias, running_mean, running_var`` become ``scale, bias, mean, var``.
"""

from __future__ import annotations

import os
import re
from typing import Any

from jitr.models.torch_state import StateDictReader, load_flat_state_dict, shape_reader

PREFIXES = ("img_enc", "txt_enc")
_NAME = "VSRN state_dict"


def _reader(state_dict: dict[str, Any]) -> StateDictReader:
  return StateDictReader(state_dict, "VSRN state_dict")


def gcn_layer_count(state_dict: dict[str, Any]) -> int:
  """Number of ``img_enc.Rs_GCN_k`` layers (k = 1, 2, ...)."""
  ks = {int(m.group(1)) for k in state_dict if (m := re.match(r"img_enc\.Rs_GCN_(\d+)\.", k))}
  return max(ks) if ks else 0


def has_caption_model(state_dict: dict[str, Any]) -> bool:
  return any(k.startswith("caption_model.") for k in state_dict)


def _image_encoder(r: StateDictReader, gcn_layers: int, feature_bn: bool) -> tuple[dict, dict]:
  params: dict[str, Any] = {"fc": r.linear("img_enc.fc")}
  stats: dict[str, Any] = {}
  for k in range(1, gcn_layers + 1):
    p = f"img_enc.Rs_GCN_{k}"
    bn, st = r.batch_norm(f"{p}.W.1")
    params[f"Rs_GCN_{k}"] = {
      **{name: r.conv1x1(f"{p}.{name}") for name in ("g", "theta", "phi")},
      "W": r.conv1x1(f"{p}.W.0"),
      "W_bn": bn,
    }
    stats[f"Rs_GCN_{k}"] = {"W_bn": st}
  params["img_rnn"] = r.gru("img_enc.img_rnn")
  if feature_bn:
    params["bn"], stats["bn"] = r.batch_norm("img_enc.bn")
  return params, stats


def _caption_model(r: StateDictReader) -> dict:
  d = "caption_model.decoder"
  return {
    "encoder": {
      "vid2hid": r.linear("caption_model.encoder.vid2hid"),
      "rnn": r.gru("caption_model.encoder.rnn"),
    },
    "decoder": {
      "embedding": {"embedding": r.take(f"{d}.embedding.weight", 2)},
      "attention": {
        "linear1": r.linear(f"{d}.attention.linear1"),
        "linear2": r.linear(f"{d}.attention.linear2", bias=False),
      },
      "rnn": r.gru(f"{d}.rnn"),
      "out": r.linear(f"{d}.out"),
    },
  }


def params_from_state_dict(state_dict: dict[str, Any]) -> tuple[dict, dict]:
  """Official flat state dict -> ``(params, batch_stats)`` of :class:`VSRN`."""
  r = _reader(state_dict)
  feature_bn = "img_enc.bn.weight" in state_dict
  img_enc, img_stats = _image_encoder(r, gcn_layer_count(state_dict), feature_bn)
  txt_enc = {"embed": {"embedding": r.take("txt_enc.embed.weight", 2)}, "rnn": r.gru("txt_enc.rnn")}
  params = {"img_enc": img_enc, "txt_enc": txt_enc}
  if has_caption_model(state_dict):
    params["caption_model"] = _caption_model(r)
  r.finish()
  return params, {"img_enc": img_stats}


def config_from_state_dict(state_dict: dict[str, Any]) -> dict[str, Any]:
  """The :class:`VSRN` fields the weights fix. ``fc_l2norm`` is not in the weights: the
  official code ties it to ``data_name`` like the feature BatchNorm (F30K has the BatchNorm
  and no fc l2norm, COCO the reverse), so it is set to ``not feature_batch_norm``."""
  shape = shape_reader(state_dict, _NAME, ("img_enc.fc.weight", "txt_enc.embed.weight"))
  embed_dim, _ = shape("img_enc.fc.weight")
  vocab_size, word_dim = shape("txt_enc.embed.weight")
  feature_bn = "img_enc.bn.weight" in state_dict
  config = dict(
    vocab_size=vocab_size,
    word_dim=word_dim,
    embed_dim=embed_dim,
    gcn_layers=gcn_layer_count(state_dict),
    fc_l2norm=not feature_bn,
    feature_batch_norm=feature_bn,
  )
  emb = "caption_model.decoder.embedding.weight"
  if has_caption_model(state_dict) and emb in state_dict:
    config["caption_word_dim"] = shape(emb)[1]
    config["caption_hidden_dim"] = shape("caption_model.encoder.vid2hid.weight")[0]
  return config


def load_official_state_dict(path: str | os.PathLike) -> dict[str, Any]:
  """Reads an official checkpoint (``torch.load(..., weights_only=True)``; only
  ``argparse.Namespace``, the saved ``opt``, is allowed beyond tensors and containers)
  and flattens ``checkpoint['model']`` into ``img_enc.* / txt_enc.*`` keys. A missing,
  empty, truncated or damaged file (a zip member failing its CRC), a file that is not
  a ``torch.save`` file and a NaN / inf weight raise
  :class:`jitr.models.official_checkpoint.OfficialCheckpointError`."""
  return load_flat_state_dict(path, PREFIXES, "VSRN")


def load_official_checkpoint(path: str | os.PathLike) -> tuple[dict, dict]:
  """``(params, batch_stats)`` of the official checkpoint at ``path`` (no captioning
  branch); the model's fields come from ``config_from_state_dict``."""
  return params_from_state_dict(load_official_state_dict(path))
