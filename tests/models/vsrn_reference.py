"""A PyTorch VSRN written from the official equations (KunpengLi1994/VSRN ``model.py``,
``GCN_lib/Rs_GCN.py``, ``models/{EncoderRNN, Attention, DecoderRNN, S2VTAttModel}.py``,
``misc/utils.LanguageModelCriterion``), shared by the VSRN parity and converter tests.
Tiny dimensions; the official ``l2norm`` (``dim=1``, no ε) is reproduced as written."""

import numpy as np
import torch

tnn = torch.nn

DIMS = dict(img_dim=6, word_dim=5, embed_dim=8, caption_hidden_dim=6, caption_word_dim=4)
VOCAB = 20
N_REGION = 5


def t_l2norm(x, dim=1):
  """The official ``l2norm``: ``X / sqrt(Σ_dim X²)``, summed over ``dim=1``."""
  return x / x.pow(2).sum(dim=dim, keepdim=True).sqrt()


class TRsGCN(tnn.Module):
  def __init__(self, c):
    super().__init__()
    conv = lambda: tnn.Conv1d(c, c, kernel_size=1)  # noqa: E731
    self.g, self.theta, self.phi = conv(), conv(), conv()
    self.W = tnn.Sequential(conv(), tnn.BatchNorm1d(c))
    tnn.init.constant_(self.W[1].weight, 0)
    tnn.init.constant_(self.W[1].bias, 0)

  def forward(self, v):  # v: [B, C, N]
    g_v = self.g(v).permute(0, 2, 1)
    theta_v = self.theta(v).permute(0, 2, 1)
    r = torch.matmul(theta_v, self.phi(v))
    y = torch.matmul(r / r.size(-1), g_v).permute(0, 2, 1).contiguous()
    return self.W(y) + v


class TImage(tnn.Module):
  """``EncoderImagePrecompAttn``; ``f30k`` switches fc-l2norm off and the BatchNorm on;
  ``region_dim`` is 1 (official) or 2 (the feature-axis option)."""

  def __init__(self, f30k, region_dim=1):
    super().__init__()
    d = DIMS["embed_dim"]
    self.f30k, self.region_dim = f30k, region_dim
    self.fc = tnn.Linear(DIMS["img_dim"], d)
    self.img_rnn = tnn.GRU(d, d, 1, batch_first=True)
    for k in range(1, 5):
      setattr(self, f"Rs_GCN_{k}", TRsGCN(d))
    if f30k:
      self.bn = tnn.BatchNorm1d(d)

  def forward(self, images):
    x = self.fc(images)
    if not self.f30k:
      x = t_l2norm(x, self.region_dim)
    x = x.permute(0, 2, 1)
    for k in range(1, 5):
      x = getattr(self, f"Rs_GCN_{k}")(x)
    regions = t_l2norm(x.permute(0, 2, 1), self.region_dim)
    _, hidden = self.img_rnn(regions)
    features = hidden[0]
    if self.f30k:
      features = self.bn(features)
    return t_l2norm(features), regions


class TText(tnn.Module):
  def __init__(self):
    super().__init__()
    self.embed = tnn.Embedding(VOCAB, DIMS["word_dim"])
    self.rnn = tnn.GRU(DIMS["word_dim"], DIMS["embed_dim"], 1, batch_first=True)

  def forward(self, tokens, lengths):
    x = self.embed(tokens)
    packed = tnn.utils.rnn.pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
    out, _ = tnn.utils.rnn.pad_packed_sequence(self.rnn(packed)[0], batch_first=True)
    idx = (
      (torch.as_tensor(lengths, device=out.device) - 1)
      .view(-1, 1, 1)
      .expand(x.size(0), 1, out.size(2))
    )
    return t_l2norm(torch.gather(out, 1, idx).squeeze(1))


class TEncoderRNN(tnn.Module):
  def __init__(self, dim_vid, h, p):
    super().__init__()
    self.vid2hid = tnn.Linear(dim_vid, h)
    self.input_dropout = tnn.Dropout(p)
    self.rnn = tnn.GRU(h, h, 1, batch_first=True)

  def forward(self, feats):
    return self.rnn(self.input_dropout(self.vid2hid(feats)))


class TAttention(tnn.Module):
  def __init__(self, dim):
    super().__init__()
    self.dim = dim
    self.linear1 = tnn.Linear(dim * 2, dim)
    self.linear2 = tnn.Linear(dim, 1, bias=False)

  def forward(self, hidden, enc):
    b, n, _ = enc.size()
    inputs = torch.cat((enc, hidden.unsqueeze(1).repeat(1, n, 1)), 2).view(-1, self.dim * 2)
    e = self.linear2(torch.tanh(self.linear1(inputs))).view(b, n)
    return torch.bmm(torch.softmax(e, dim=1).unsqueeze(1), enc).squeeze(1)


class TDecoderRNN(tnn.Module):
  def __init__(self, vocab, h, w, p):
    super().__init__()
    self.input_dropout = tnn.Dropout(p)
    self.embedding = tnn.Embedding(vocab, w)
    self.attention = TAttention(h)
    self.rnn = tnn.GRU(h + w, h, 1, batch_first=True)
    self.out = tnn.Linear(h, vocab)

  def forward(self, enc_out, enc_hidden, targets):
    hidden, emb, logprobs = enc_hidden, self.embedding(targets), []
    for i in range(targets.size(1) - 1):
      context = self.attention(hidden.squeeze(0), enc_out)
      x = self.input_dropout(torch.cat([emb[:, i], context], dim=1)).unsqueeze(1)
      out, hidden = self.rnn(x, hidden)
      logprobs.append(torch.log_softmax(self.out(out.squeeze(1)), dim=1).unsqueeze(1))
    return torch.cat(logprobs, 1)


class TS2VTAttModel(tnn.Module):
  def __init__(self, p=0.0):
    super().__init__()
    h, w = DIMS["caption_hidden_dim"], DIMS["caption_word_dim"]
    self.encoder = TEncoderRNN(DIMS["embed_dim"], h, p)
    self.decoder = TDecoderRNN(VOCAB, h, w, p)

  def forward(self, feats, labels):
    return self.decoder(*self.encoder(feats), labels)


def language_model_nll(logprobs, target, mask):
  """``LanguageModelCriterion`` per caption (before the sum / batch size)."""
  nll = -logprobs.gather(2, target.unsqueeze(2)).squeeze(2)
  return (nll * mask).sum(1)


def torch_vsrn(f30k=False, region_dim=1, seed=0):
  """``(img_enc, txt_enc, caption_model)`` with non-trivial GCN BatchNorms."""
  torch.manual_seed(seed)
  parts = [TImage(f30k, region_dim), TText(), TS2VTAttModel()]
  with torch.no_grad():
    for m in parts[0].modules():
      if isinstance(m, tnn.BatchNorm1d):
        m.weight.uniform_(0.5, 1.5)
        m.bias.normal_(0, 0.3)
        m.running_mean.normal_(0, 0.3)
        m.running_var.uniform_(0.5, 1.5)
  return parts


def flat_state_dict(parts, caption=True):
  names = ("img_enc", "txt_enc", "caption_model")[: 3 if caption else 2]
  return {
    f"{p}.{k}": v.clone() for p, part in zip(names, parts) for k, v in part.state_dict().items()
  }


def inputs(seed=0, batch=3, steps=7):
  rng = np.random.default_rng(seed)
  images = rng.normal(size=(batch, N_REGION, DIMS["img_dim"])).astype(np.float32)
  lengths = np.array([7, 3, 5, 2, 6][:batch])
  tokens = rng.integers(1, VOCAB, size=(batch, steps))
  tokens[np.arange(steps)[None] >= lengths[:, None]] = 0
  return images, tokens, lengths


def torch_forward(parts, images, tokens, lengths, train):
  """``(img [B, D], regions [B, N, D], txt [B, D], caption log-likelihood [B])``."""
  for p in parts:
    p.train(train)
  with torch.no_grad():
    img, regions = parts[0](torch.from_numpy(images))
    txt = parts[1](torch.from_numpy(tokens), list(lengths))
    labels = torch.from_numpy(tokens)
    mask = (torch.arange(tokens.shape[1])[None] < torch.from_numpy(lengths)[:, None]).float()
    logprobs = parts[2](regions, labels)
    ll = -language_model_nll(logprobs, labels[:, 1:], mask[:, 1:])
  return img.numpy(), regions.numpy(), txt.numpy(), ll.numpy()
