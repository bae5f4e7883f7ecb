"""The official VSE∞ modules (woodfrog/vse_infty ``lib/encoders.py`` ``EncoderImageAggr``
with ``precomp_enc_type="basic"`` and ``EncoderText``, ``lib/modules/aggr/gpo.py``
``GPO``, ``lib/modules/mlp.py`` ``MLP``) transcribed in PyTorch, with transformers'
``BertModel`` built from a config (random weights, no download) instead of
``from_pretrained('bert-base-uncased')``; shared by the VSE∞ parity tests and by
``scripts/bench_vseinf.py``."""

import math

import torch
import torch.nn.functional as F
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

tnn = torch.nn


def l2norm(x, dim):
  return x / (torch.pow(x, 2).sum(dim=dim, keepdim=True).sqrt() + 1e-8)


def positional_encoding_1d(d_model, length):
  pe = torch.zeros(length, d_model)
  position = torch.arange(0, length).unsqueeze(1)
  div_term = torch.exp(
    torch.arange(0, d_model, 2, dtype=torch.float) * -(math.log(10000.0) / d_model)
  )
  pe[:, 0::2] = torch.sin(position.float() * div_term)
  pe[:, 1::2] = torch.cos(position.float() * div_term)
  return pe


class GPO(tnn.Module):
  def __init__(self, d_pe, d_hidden):
    super().__init__()
    self.d_pe = d_pe
    self.d_hidden = d_hidden
    self.gru = tnn.GRU(d_pe, d_hidden, 1, batch_first=True, bidirectional=True)
    self.linear = tnn.Linear(d_hidden, 1, bias=False)

  def compute_pool_weights(self, lengths, features):
    max_len = int(lengths.max())
    pes = positional_encoding_1d(self.d_pe, max_len).unsqueeze(0).repeat(lengths.size(0), 1, 1)
    pes = pes.to(lengths.device)
    mask = torch.arange(max_len).expand(lengths.size(0), max_len).to(lengths.device)
    mask = (mask < lengths.long().unsqueeze(1)).unsqueeze(-1)
    pes = pes.masked_fill(mask == 0, 0)
    packed = pack_padded_sequence(pes, lengths.cpu(), batch_first=True, enforce_sorted=False)
    out, _ = self.gru(packed)
    out_emb, _ = pad_packed_sequence(out, batch_first=True)
    half = out_emb.size(2) // 2
    out_emb = (out_emb[:, :, :half] + out_emb[:, :, half:]) / 2
    scores = self.linear(out_emb)
    scores[torch.where(mask == 0)] = -10000
    return torch.softmax(scores / 0.1, 1), mask

  def forward(self, features, lengths):
    pool_weights, mask = self.compute_pool_weights(lengths, features)
    features = features[:, : int(lengths.max()), :]
    sorted_features = features.masked_fill(mask == 0, -10000)
    sorted_features = sorted_features.sort(dim=1, descending=True)[0]
    sorted_features = sorted_features.masked_fill(mask == 0, 0)
    return (sorted_features * pool_weights).sum(1), pool_weights


class MLP(tnn.Module):
  def __init__(self, input_dim, hidden_dim, output_dim, num_layers):
    super().__init__()
    self.output_dim = output_dim
    self.num_layers = num_layers
    h = [hidden_dim] * (num_layers - 1)
    self.layers = tnn.ModuleList(
      tnn.Linear(n, k) for n, k in zip([input_dim] + h, h + [output_dim])
    )
    self.bns = tnn.ModuleList(tnn.BatchNorm1d(k) for k in h + [output_dim])

  def forward(self, x):
    b, n, d = x.size()
    x = x.reshape(b * n, d)
    for i, (bn, layer) in enumerate(zip(self.bns, self.layers)):
      x = F.relu(bn(layer(x))) if i < self.num_layers - 1 else layer(x)
    return x.view(b, n, self.output_dim)


class EncoderImageAggr(tnn.Module):
  def __init__(self, img_dim, embed_size, no_imgnorm=False):
    super().__init__()
    self.no_imgnorm = no_imgnorm
    self.fc = tnn.Linear(img_dim, embed_size)
    self.mlp = MLP(img_dim, embed_size // 2, embed_size, 2)
    self.gpool = GPO(32, 32)
    r = math.sqrt(6.0) / math.sqrt(self.fc.in_features + self.fc.out_features)
    self.fc.weight.data.uniform_(-r, r)
    self.fc.bias.data.fill_(0)

  def forward(self, images, image_lengths):
    features = self.mlp(images) + self.fc(images)
    features, _ = self.gpool(features, image_lengths)
    return features if self.no_imgnorm else l2norm(features, dim=-1)


def bert_model(vocab_size, hidden, layers, heads, intermediate):
  """transformers' ``BertModel`` of that size, random weights (no pooler: the official
  text tower reads only the last hidden state)."""
  from transformers import BertConfig, BertModel

  config = BertConfig(
    vocab_size=vocab_size,
    hidden_size=hidden,
    num_hidden_layers=layers,
    num_attention_heads=heads,
    intermediate_size=intermediate,
  )
  return BertModel(config, add_pooling_layer=False)


class EncoderText(tnn.Module):
  def __init__(self, embed_size, bert, no_txtnorm=False):
    super().__init__()
    self.no_txtnorm = no_txtnorm
    self.bert = bert
    self.linear = tnn.Linear(bert.config.hidden_size, embed_size)
    self.gpool = GPO(32, 32)

  def forward(self, x, lengths):
    bert_attention_mask = (x != 0).float()
    bert_emb = self.bert(x, bert_attention_mask)[0]
    cap_emb = self.linear(bert_emb)
    pooled, _ = self.gpool(cap_emb, lengths.to(cap_emb.device))
    return pooled if self.no_txtnorm else l2norm(pooled, dim=-1)


def official_optimizer(img_enc, txt_enc, learning_rate):
  """``VSEModel``'s AdamW (lib/vse.py, ``precomp_enc_type="basic"``, ``optim="adam"``):
  the text tower without BERT at ``lr``, BERT at ``0.1 lr``, the image tower at ``lr``,
  weight decay 1e-4 on every parameter."""
  bert_ptrs = {p.data_ptr() for p in txt_enc.bert.parameters()}
  text_no_bert = [p for p in txt_enc.parameters() if p.data_ptr() not in bert_ptrs]
  return torch.optim.AdamW(
    [
      {"params": text_no_bert, "lr": learning_rate},
      {"params": list(txt_enc.bert.parameters()), "lr": learning_rate * 0.1},
      {"params": img_enc.parameters(), "lr": learning_rate},
    ],
    lr=learning_rate,
    weight_decay=1e-4,
  )
