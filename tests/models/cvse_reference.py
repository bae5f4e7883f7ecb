"""A PyTorch transcription of the official CVSE code (BruceW91/CVSE ``model_CVSE.py``,
``util/utils.py``, ``util/C_GCN.py``, ``util/util_C_GCN.py``), step by step as the official
modules compute, with their attribute layout (so their ``state_dict`` keys are the official
ones). Only ``.cuda()`` calls and the deprecated ``Variable`` / ``volatile`` are left out;
the word embedding starts from ``random_init`` (GloVe needs a download)."""

import torch
import torch.nn as tnn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

# fmt: off


def l2norm(X, dim=-1, eps=1e-12):
  norm = torch.pow(X, 2).sum(dim=dim, keepdim=True).sqrt() + eps
  X = torch.div(X, norm)
  return X


class V_single_modal_atten(tnn.Module):
  def __init__(self, image_dim, embed_dim, use_bn, activation_type, dropout_rate, img_region_num):
    super().__init__()
    self.fc1 = tnn.Linear(image_dim, embed_dim)
    self.fc2 = tnn.Linear(image_dim, embed_dim)
    self.fc2_2 = tnn.Linear(embed_dim, embed_dim)
    self.fc3 = tnn.Linear(embed_dim, 1)
    self.fc4 = tnn.Linear(image_dim, embed_dim)
    if use_bn == True and activation_type == "tanh":  # noqa: E712 (official), CVSE's branch
      self.embedding_1 = tnn.Sequential(
        self.fc1, tnn.BatchNorm1d(img_region_num), tnn.Tanh(), tnn.Dropout(dropout_rate)
      )
      self.embedding_2 = tnn.Sequential(
        self.fc2, tnn.BatchNorm1d(embed_dim), tnn.Tanh(), tnn.Dropout(dropout_rate)
      )
      self.embedding_2_2 = tnn.Sequential(
        self.fc2_2, tnn.BatchNorm1d(embed_dim), tnn.Tanh(), tnn.Dropout(dropout_rate)
      )
      self.embedding_3 = tnn.Sequential(self.fc3)
    elif use_bn == False and activation_type == "tanh":  # noqa: E712
      self.embedding_1 = tnn.Sequential(self.fc1, tnn.Tanh(), tnn.Dropout(dropout_rate))
      self.embedding_2 = tnn.Sequential(self.fc2, tnn.Tanh(), tnn.Dropout(dropout_rate))
      self.embedding_2_2 = tnn.Sequential(self.fc2_2, tnn.Tanh(), tnn.Dropout(dropout_rate))
      self.embedding_3 = tnn.Sequential(self.fc3, tnn.Tanh(), tnn.Dropout(dropout_rate))
    elif use_bn == True and activation_type == "sigmoid":  # noqa: E712
      self.embedding_1 = tnn.Sequential(
        self.fc1, tnn.BatchNorm1d(img_region_num), tnn.Sigmoid(), tnn.Dropout(dropout_rate)
      )
      self.embedding_2 = tnn.Sequential(
        self.fc2, tnn.BatchNorm1d(embed_dim), tnn.Sigmoid(), tnn.Dropout(dropout_rate)
      )
      self.embedding_2_2 = tnn.Sequential(
        self.fc2_2, tnn.BatchNorm1d(embed_dim), tnn.Sigmoid(), tnn.Dropout(dropout_rate)
      )
      self.embedding_3 = tnn.Sequential(self.fc3)
    else:
      self.embedding_1 = tnn.Sequential(self.fc1, tnn.Sigmoid(), tnn.Dropout(dropout_rate))
      self.embedding_2 = tnn.Sequential(self.fc2, tnn.Sigmoid(), tnn.Dropout(dropout_rate))
      self.embedding_2_2 = tnn.Sequential(
        self.fc2_2, tnn.BatchNorm1d(embed_dim), tnn.Sigmoid(), tnn.Dropout(dropout_rate)
      )
      self.embedding_3 = tnn.Sequential(self.fc3)
    self.softmax = tnn.Softmax(dim=1)

  def forward(self, v_t, m_v):
    W_v = self.embedding_1(v_t)
    if m_v.size()[-1] == v_t.size()[-1]:
      W_v_m = self.embedding_2(m_v)
    else:
      W_v_m = self.embedding_2_2(m_v)
    W_v_m = W_v_m.unsqueeze(1).repeat(1, W_v.size()[1], 1)
    h_v = W_v.mul(W_v_m)
    a_v = self.embedding_3(h_v)
    a_v = a_v.squeeze(2)
    weights = self.softmax(a_v)
    v_att = (weights.unsqueeze(2) * v_t).sum(dim=1)
    v_att = l2norm(v_att)
    return v_att, weights


class T_single_modal_atten(tnn.Module):
  def __init__(self, embed_dim, use_bn, activation_type, dropout_rate):
    super().__init__()
    self.fc1 = tnn.Linear(embed_dim, embed_dim)
    self.fc2 = tnn.Linear(embed_dim, embed_dim)
    self.fc3 = tnn.Linear(embed_dim, 1)
    assert activation_type == "tanh"
    self.embedding_1 = tnn.Sequential(self.fc1, tnn.Tanh(), tnn.Dropout(dropout_rate))
    self.embedding_2 = tnn.Sequential(self.fc2, tnn.Tanh(), tnn.Dropout(dropout_rate))
    self.embedding_3 = tnn.Sequential(self.fc3)
    self.softmax = tnn.Softmax(dim=1)

  def forward(self, u_t, m_u):
    W_u = self.embedding_1(u_t)
    W_u_m = self.embedding_2(m_u)
    W_u_m = W_u_m.unsqueeze(1).repeat(1, W_u.size()[1], 1)
    h_u = W_u.mul(W_u_m)
    a_u = self.embedding_3(h_u)
    a_u = a_u.squeeze(2)
    weights = self.softmax(a_u)
    u_att = (weights.unsqueeze(2) * u_t).sum(dim=1)
    u_att = l2norm(u_att)
    return u_att, weights


class EncoderImagePrecomp(tnn.Module):
  def __init__(self, img_dim, embed_size, no_imgnorm=False):
    super().__init__()
    self.embed_size = embed_size
    self.no_imgnorm = no_imgnorm
    self.fc = tnn.Linear(img_dim, embed_size)

  def forward(self, images):
    features = self.fc(images)
    if not self.no_imgnorm:
      features = l2norm(features, dim=-1)
    features_mean = torch.mean(features, 1)
    return features, features_mean


class EncoderText(tnn.Module):
  def __init__(self, vocab_size, word_dim, embed_size, num_layers, dropout_rate):
    super().__init__()
    self.embed = tnn.Embedding(vocab_size, word_dim)
    self.rnn = tnn.GRU(word_dim, embed_size, num_layers, batch_first=True, bidirectional=True)
    self.dropout = tnn.Dropout(dropout_rate)
    tnn.init.xavier_uniform_(self.embed.weight)  # wemb_type 'random_init'

  def forward(self, x, lengths):
    x = self.embed(x)
    x = self.dropout(x)
    packed = pack_padded_sequence(x, lengths, batch_first=True)
    out, _ = self.rnn(packed)
    padded = pad_packed_sequence(out, batch_first=True)
    cap_emb, cap_len = padded
    half = int(cap_emb.size(2) / 2)
    cap_emb = (cap_emb[:, :, :half] + cap_emb[:, :, half:]) / 2
    cap_emb = l2norm(cap_emb, dim=-1)
    cap_emb_mean = torch.mean(cap_emb, 1)
    cap_emb_mean = l2norm(cap_emb_mean)
    return cap_emb, cap_emb_mean


class Consensus_level_feature_learning(tnn.Module):
  def __init__(self, image_dim, embed_dim, use_bn, activation_type, dropout_rate):
    super().__init__()
    self.no_imgnorm = False
    self.fc1 = tnn.Linear(image_dim, embed_dim)
    self.fc2 = tnn.Linear(embed_dim, embed_dim)
    self.fc3 = tnn.Linear(embed_dim, 1)
    if use_bn == True and activation_type == "tanh":  # noqa: E712
      self.embedding_1 = tnn.Sequential(self.fc1, tnn.BatchNorm1d(embed_dim), tnn.Tanh())
      self.embedding_2 = tnn.Sequential(self.fc2, tnn.BatchNorm1d(embed_dim), tnn.Tanh())
      self.embedding_3 = tnn.Sequential(self.fc3)
    elif use_bn == False and activation_type == "tanh":  # noqa: E712
      self.embedding_1 = tnn.Sequential(self.fc1, tnn.Tanh())
      self.embedding_2 = tnn.Sequential(self.fc2, tnn.Tanh())
      self.embedding_3 = tnn.Sequential(self.fc3)
    elif use_bn == True and activation_type == "sigmoid":  # noqa: E712
      self.embedding_1 = tnn.Sequential(self.fc1, tnn.BatchNorm1d(embed_dim), tnn.Sigmoid())
      self.embedding_2 = tnn.Sequential(self.fc2, tnn.BatchNorm1d(embed_dim), tnn.Sigmoid())
      self.embedding_3 = tnn.Sequential(self.fc3)
    else:
      self.embedding_1 = tnn.Sequential(self.fc1, tnn.Dropout(dropout_rate))
      self.embedding_2 = tnn.Sequential(self.fc2, tnn.Dropout(dropout_rate))
      self.embedding_3 = tnn.Sequential(self.fc3)
    self.softmax = tnn.Softmax(dim=1)
    self.smooth_coef = 10

  def forward(self, emb_instance, concept_feature, input_modal, GT_label, GT_label_ratio):
    W_s = self.embedding_1(concept_feature)
    W_v_m = self.embedding_2(emb_instance)
    W_v_m = W_v_m.unsqueeze(1).repeat(1, W_s.size()[0], 1)
    h_s = W_s.mul(W_v_m)
    a_s = self.embedding_3(h_s)
    a_s = a_s.squeeze(2)
    weights = self.softmax(a_s * self.smooth_coef)
    if input_modal == "textual":
      GT_label_scale = self.softmax(GT_label * self.smooth_coef)
      weights_u = GT_label_ratio * GT_label_scale + (1 - GT_label_ratio) * weights
      concept_feature = l2norm(concept_feature)
      emb_concept = (weights_u.unsqueeze(2) * concept_feature).sum(dim=1)
      if not self.no_imgnorm:
        emb_concept = l2norm(emb_concept)
      return emb_concept, weights_u
    elif input_modal == "visual":
      weights_v = weights
      concept_feature = l2norm(concept_feature)
      emb_concept = (weights_v.unsqueeze(2) * concept_feature).sum(dim=1)
      if not self.no_imgnorm:
        emb_concept = l2norm(emb_concept)
      return emb_concept, weights_v


def gen_adj(A):  # util_C_GCN.gen_adj
  D = torch.pow(A.sum(1).float(), -0.5)
  D = torch.diag(D)
  adj = torch.matmul(torch.matmul(A, D).t(), D)
  return adj


class GraphConvolution(tnn.Module):
  def __init__(self, in_features, out_features):
    super().__init__()
    self.weight = tnn.Parameter(torch.empty(in_features, out_features))
    self.register_parameter("bias", None)
    stdv = 1.0 / self.weight.size(1) ** 0.5
    self.weight.data.uniform_(-stdv, stdv)

  def forward(self, input, adj, conv_mode="whole_graph"):
    support = torch.matmul(input, self.weight)
    return torch.matmul(adj["adj_all"], support)


class C_GCN(tnn.Module):
  def __init__(self, in_channel, embed_size, adj_all):
    super().__init__()
    self.gc1 = GraphConvolution(in_channel, embed_size // 2)
    self.gc2 = GraphConvolution(embed_size // 2, embed_size)
    self.relu = tnn.LeakyReLU(0.2)
    self.adj_O_P = tnn.Parameter(adj_all.clone())  # gen_A_concept's three graphs
    self.adj_O_M = tnn.Parameter(adj_all.clone())
    self.adj_all = tnn.Parameter(adj_all.clone())
    self.joint_att_emb = tnn.Linear(embed_size, embed_size)

  def forward(self, feature, inp, conv_mode="whole_graph"):
    inp = inp[0]
    adj = {"adj_all": gen_adj(self.adj_all).detach()}
    x = self.gc1(inp, adj, conv_mode=conv_mode)
    x = self.relu(x)
    x = self.gc2(x, adj, conv_mode=conv_mode)
    return l2norm(x)


class Multi_feature_fusing(tnn.Module):
  def forward(self, v_emb_instance, t_emb_instance, v_emb_concept, t_emb_concept, alpha=0.75):
    v_fused_emb = alpha * v_emb_instance + (1 - alpha) * v_emb_concept
    v_fused_emb = l2norm(v_fused_emb)
    t_fused_emb = alpha * t_emb_instance + (1 - alpha) * t_emb_concept
    t_fused_emb = l2norm(t_fused_emb)
    return v_fused_emb, t_fused_emb


def contrastive_loss(im, s, margin=0.2, max_violation=True):  # ContrastiveLoss, cosine_sim
  scores = im.mm(s.t())
  diagonal = scores.diag().view(im.size(0), 1)
  d1 = diagonal.expand_as(scores)
  d2 = diagonal.t().expand_as(scores)
  cost_s = (margin + scores - d1).clamp(min=0)
  cost_im = (margin + scores - d2).clamp(min=0)
  I = torch.eye(scores.size(0), device=scores.device) > 0.5  # noqa: E741 (official name)
  cost_s = cost_s.masked_fill_(I, 0)
  cost_im = cost_im.masked_fill_(I, 0)
  if max_violation:
    cost_s = cost_s.max(1)[0]
    cost_im = cost_im.max(0)[0]
  return cost_s.sum() + cost_im.sum()


def kl_loss_softmax(im, s):  # KL_loss_softmax
  return tnn.KLDivLoss(reduction="none")(torch.log(im), s).sum()


class CVSE(tnn.Module):
  """The official ``CVSE`` object's modules, ``forward_emb`` and ``forward_loss``."""

  def __init__(self, vocab_size, img_dim, word_dim, embed_size, num_region, concept_dim,
               adj_all, dropout_rate=0.4, label_ratio=0.35):
    super().__init__()
    self.GT_label_ratio = label_ratio
    self.img_enc = EncoderImagePrecomp(img_dim, embed_size)
    self.txt_enc = EncoderText(vocab_size, word_dim, embed_size, 1, dropout_rate)
    self.V_self_atten_enhance = V_single_modal_atten(
      embed_size, embed_size, True, "tanh", dropout_rate, num_region)
    self.T_self_atten_enhance = T_single_modal_atten(embed_size, True, "tanh", dropout_rate)
    self.V_consensus_level_embedding = Consensus_level_feature_learning(
      embed_size, embed_size, True, "tanh", dropout_rate)
    self.T_consensus_level_embedding = Consensus_level_feature_learning(
      embed_size, embed_size, True, "tanh", dropout_rate)
    self.C_GCN = C_GCN(concept_dim, embed_size, adj_all)
    self.Multi_feature_fusing = Multi_feature_fusing()

  def official_state_dict(self):
    return [self.img_enc.state_dict(), self.txt_enc.state_dict(),
            self.V_self_atten_enhance.state_dict(), self.T_self_atten_enhance.state_dict(),
            self.V_consensus_level_embedding.state_dict(),
            self.T_consensus_level_embedding.state_dict(),
            self.C_GCN.state_dict(), self.Multi_feature_fusing.state_dict()]

  def forward_emb(self, images, captions, concept_labels, concept_input_embs, lengths, alpha):
    img_emb, img_emb_mean = self.img_enc(images)
    cap_emb, cap_emb_mean = self.txt_enc(captions, lengths)
    instance_emb_v, visual_weights = self.V_self_atten_enhance(img_emb, img_emb_mean)
    instance_emb_t, textual_weights = self.T_self_atten_enhance(cap_emb, cap_emb_mean)
    concept_basis_v = self.C_GCN(instance_emb_v, concept_input_embs, conv_mode="whole_graph")
    concept_basis_t = self.C_GCN(instance_emb_t, concept_input_embs, conv_mode="whole_graph")
    consensus_emb_v, predict_score_v = self.V_consensus_level_embedding(
      instance_emb_v, concept_basis_v, input_modal="visual",
      GT_label=concept_labels, GT_label_ratio=self.GT_label_ratio)
    consensus_emb_t, predict_score_t = self.T_consensus_level_embedding(
      instance_emb_t, concept_basis_t, input_modal="textual",
      GT_label=concept_labels, GT_label_ratio=self.GT_label_ratio)
    fused_emb_v, fused_emb_t = self.Multi_feature_fusing(
      instance_emb_v, instance_emb_t, consensus_emb_v, consensus_emb_t, alpha=alpha)
    emb_v = torch.stack((instance_emb_v, consensus_emb_v, fused_emb_v), dim=0)
    emb_t = torch.stack((instance_emb_t, consensus_emb_t, fused_emb_t), dim=0)
    return emb_v, emb_t, predict_score_v, predict_score_t

  def forward_loss(self, v_emb, t_emb, predict_score_v, predict_score_t, margin=0.2):
    """``(total, [rank, rank_instance, rank_consensus, cls_KL])`` with weights 3, 5, 1, 2."""
    weight = [3, 5, 1, 2]
    terms = [contrastive_loss(v_emb[2], t_emb[2], margin),
             contrastive_loss(v_emb[0], t_emb[0], margin),
             contrastive_loss(v_emb[1], t_emb[1], margin),
             kl_loss_softmax(predict_score_v, predict_score_t)]
    return sum(w * t for w, t in zip(weight, terms)), terms
# fmt: on


def randomize(model, rng, *, weight_scale, mean_scale=None):
  """``model`` (in place) with every parameter but the never-trained concept graphs
  (``C_GCN.adj_*``) drawn from ``N(0, weight_scale²)``, every running variance from
  ``U(0.5, 1.5)`` and, with ``mean_scale``, every running mean from ``N(0, mean_scale²)``."""
  with torch.no_grad():
    for name, p in model.named_parameters():
      if not name.startswith("C_GCN.adj_"):
        p.copy_(torch.tensor(rng.normal(0.0, weight_scale, p.shape), dtype=torch.float32))
    for name, buf in model.named_buffers():
      if name.endswith("running_mean") and mean_scale is not None:
        buf.copy_(torch.tensor(rng.normal(0.0, mean_scale, buf.shape), dtype=torch.float32))
      elif name.endswith("running_var"):
        buf.copy_(torch.tensor(rng.uniform(0.5, 1.5, buf.shape), dtype=torch.float32))
