"""A PyTorch SGR / SAF written from the official equations (Paranioar/SGRAF ``model.py``:
``EncoderImage``, ``EncoderText`` (BiGRU over packed captions), ``EncoderSimilarity`` with
its per-caption loop, ``GraphReasoning``, ``AttentionFiltration``), shared by the SGRAF
parity and converter tests and by ``scripts/bench_train.py``. Sizes come from the module
globals ``DIMS`` / ``VOCAB`` (tiny by default), read when a module is built."""

import numpy as np
import torch

tnn = torch.nn

DIMS = dict(img_dim=6, word_dim=5, embed_dim=8, sim_dim=4, num_region=5)
VOCAB = 20


def t_l2norm(x, dim=-1):
  return x / (x.pow(2).sum(dim, keepdim=True).sqrt() + 1e-8)


def t_l1norm(x, dim=-1):
  return x / (x.abs().sum(dim, keepdim=True) + 1e-8)


class TImage(tnn.Module):
  def __init__(self):
    super().__init__()
    self.fc = tnn.Linear(DIMS["img_dim"], DIMS["embed_dim"])

  def forward(self, images):
    return t_l2norm(self.fc(images))


class TText(tnn.Module):
  """Embed -> Dropout -> BiGRU over the packed captions, directions averaged -> l2norm."""

  def __init__(self, dropout):
    super().__init__()
    self.embed = tnn.Embedding(VOCAB, DIMS["word_dim"])
    self.dropout = tnn.Dropout(dropout)
    self.cap_rnn = tnn.GRU(
      DIMS["word_dim"], DIMS["embed_dim"], 1, batch_first=True, bidirectional=True
    )

  def forward(self, tokens, lengths):
    x = self.dropout(self.embed(tokens))
    packed = tnn.utils.rnn.pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
    out, _ = tnn.utils.rnn.pad_packed_sequence(self.cap_rnn(packed)[0], batch_first=True)
    half = out.size(2) // 2
    return t_l2norm((out[:, :, :half] + out[:, :, half:]) / 2)


def _self_attention(self, local, raw_global):
  l_emb = self.embedding_local(local)
  g_emb = self.embedding_global(raw_global).unsqueeze(1)
  weights = torch.softmax(self.embedding_common(l_emb * g_emb).squeeze(2), dim=1)
  return t_l2norm((weights.unsqueeze(2) * local).sum(1))


class TVisualSA(tnn.Module):
  def __init__(self, d, dropout, num_region):
    super().__init__()
    self.embedding_local = tnn.Sequential(
      tnn.Linear(d, d), tnn.BatchNorm1d(num_region), tnn.Tanh(), tnn.Dropout(dropout)
    )
    self.embedding_global = tnn.Sequential(
      tnn.Linear(d, d), tnn.BatchNorm1d(d), tnn.Tanh(), tnn.Dropout(dropout)
    )
    self.embedding_common = tnn.Sequential(tnn.Linear(d, 1))

  forward = _self_attention


class TTextSA(tnn.Module):
  def __init__(self, d, dropout):
    super().__init__()
    self.embedding_local = tnn.Sequential(tnn.Linear(d, d), tnn.Tanh(), tnn.Dropout(dropout))
    self.embedding_global = tnn.Sequential(tnn.Linear(d, d), tnn.Tanh(), tnn.Dropout(dropout))
    self.embedding_common = tnn.Sequential(tnn.Linear(d, 1))

  forward = _self_attention


class TGraphReasoning(tnn.Module):
  def __init__(self, s):
    super().__init__()
    self.graph_query_w, self.graph_key_w, self.sim_graph_w = (tnn.Linear(s, s) for _ in range(3))

  def forward(self, nodes):
    edge = torch.softmax(self.graph_query_w(nodes) @ self.graph_key_w(nodes).transpose(1, 2), -1)
    return torch.relu(self.sim_graph_w(edge @ nodes))


class TAttentionFiltration(tnn.Module):
  def __init__(self, s):
    super().__init__()
    self.attn_sim_w = tnn.Linear(s, 1)
    self.bn = tnn.BatchNorm1d(1)

  def forward(self, nodes):
    attn = t_l1norm(torch.sigmoid(self.bn(self.attn_sim_w(nodes).permute(0, 2, 1))), dim=-1)
    return t_l2norm((attn @ nodes).squeeze(1))


def t_scan_attention(query, context, smooth):
  attn = tnn.functional.leaky_relu(context @ query.transpose(1, 2), 0.1)  # [n, R, L]
  attn = torch.softmax(t_l2norm(attn, 2).transpose(1, 2) * smooth, dim=2)  # [n, L, R]
  return t_l2norm(attn @ context)


class TSimilarity(tnn.Module):
  def __init__(self, module, steps, dropout):
    super().__init__()
    d, s = DIMS["embed_dim"], DIMS["sim_dim"]
    self.module_name = module
    self.v_global_w = TVisualSA(d, dropout, DIMS["num_region"])
    self.t_global_w = TTextSA(d, dropout)
    self.sim_tranloc_w, self.sim_tranglo_w = tnn.Linear(d, s), tnn.Linear(d, s)
    self.sim_eval_w = tnn.Linear(s, 1)
    if module == "SGR":
      self.SGR_module = tnn.ModuleList([TGraphReasoning(s) for _ in range(steps)])
    else:
      self.SAF_module = TAttentionFiltration(s)

  def forward(self, img, cap, cap_lens):
    img_glo = self.v_global_w(img, img.mean(1))
    columns = []
    for i, n_word in enumerate(cap_lens):
      cap_i = cap[i, :n_word].unsqueeze(0)
      cap_rep = cap_i.repeat(img.size(0), 1, 1)
      cap_glo = self.t_global_w(cap_i, cap_i.mean(1))
      local = (t_scan_attention(cap_rep, img, 9.0) - cap_rep) ** 2
      local = t_l2norm(self.sim_tranloc_w(local))
      glob = t_l2norm(self.sim_tranglo_w((img_glo - cap_glo) ** 2))
      nodes = torch.cat([glob.unsqueeze(1), local], 1)
      if self.module_name == "SGR":
        for step in self.SGR_module:
          nodes = step(nodes)
        vec = nodes[:, 0]
      else:
        vec = self.SAF_module(nodes)
      columns.append(torch.sigmoid(self.sim_eval_w(vec)))
    return torch.cat(columns, 1)


def torch_model(module, dropout=0.0, seed=0):
  torch.manual_seed(seed)
  parts = [TImage(), TText(dropout), TSimilarity(module, 3, dropout)]
  with torch.no_grad():
    for m in parts[2].modules():  # non-trivial BatchNorm affine and running statistics
      if isinstance(m, tnn.BatchNorm1d):
        m.weight.uniform_(0.5, 1.5)
        m.bias.normal_(0, 0.3)
        m.running_mean.normal_(0, 0.3)
        m.running_var.uniform_(0.5, 1.5)
    for m in parts[2].modules():  # larger weights spread the scores: a sharper parity test
      if isinstance(m, tnn.Linear):
        m.weight.mul_(3.0)
    parts[2].sim_eval_w.weight.mul_(8.0)
  return parts


def flat_state_dict(parts):
  return {
    f"{prefix}.{k}": v.clone()
    for prefix, part in zip(("img_enc", "txt_enc", "sim_enc"), parts)
    for k, v in part.state_dict().items()
  }


def inputs(seed=0):
  rng = np.random.default_rng(seed)
  images = rng.normal(size=(3, DIMS["num_region"], DIMS["img_dim"])).astype(np.float32)
  lengths = np.array([6, 3, 5, 2])
  tokens = rng.integers(1, VOCAB, size=(4, 8))  # two columns beyond the longest caption
  tokens[np.arange(8)[None] >= lengths[:, None]] = 0
  return images, tokens, lengths


def torch_forward(parts, images, tokens, lengths, train):
  for p in parts:
    p.train(train)
  with torch.no_grad():
    img = parts[0](torch.from_numpy(images))
    cap = parts[1](torch.from_numpy(tokens), torch.from_numpy(lengths))
    return parts[2](img, cap, list(lengths)).numpy()
