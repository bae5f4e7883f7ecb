"""The two-branch network: one MLP per modality into a common space (CMAL²R's networks).

Each branch maps its vectors through fully connected layers with a ReLU after every
hidden one and l2-normalises the output::

    h_0 = x,   h_l = ReLU(W_l h_{l-1} + b_l)   (l = 1 .. L, the hidden widths)
    f(x) = (W_out h_L + b_out) / ‖W_out h_L + b_out‖₂          [embed_dim]

so ``s(image i, text j) = f_img(x_i) · f_txt(t_j)`` is a cosine. CMAL²R trains two such
branches on class-labelled image and text vectors; its layer widths are not among the
settings jitr takes from it, and the defaults (one hidden layer of 2048, a 512-d common
space) follow the two-branch embedding network of Wang, Li and Lazebnik (CVPR 2016).
Dropout (rate ``dropout``, training only) follows every hidden layer.
"""

from __future__ import annotations

from collections.abc import Sequence

import flax.linen as nn
import jax

from jitr.losses.normalize import l2_normalize


class Branch(nn.Module):
  """``[B, D_in] -> [B, embed_dim]``, l2-normalised: the hidden layers (Dense + ReLU +
  dropout) then the output layer."""

  hidden: Sequence[int]
  embed_dim: int
  dropout: float = 0.0

  @nn.compact
  def __call__(self, x: jax.Array, train: bool = False) -> jax.Array:
    for i, width in enumerate(self.hidden):
      x = nn.relu(nn.Dense(width, name=f"hidden_{i}")(x))
      if self.dropout:
        x = nn.Dropout(self.dropout)(x, deterministic=not train)
    return l2_normalize(nn.Dense(self.embed_dim, name="out")(x))


class TwoBranch(nn.Module):
  """``(images [B, D_img], texts [B', D_txt]) -> (img [B, E], txt [B', E])``, each row
  l2-normalised (the module docstring).

  Attributes:
    image_hidden: the widths of the image branch's hidden layers (default one of 2048).
    text_hidden: the widths of the text branch's hidden layers (default one of 2048).
    embed_dim: the width E of the common space (default 512).
    dropout: the dropout rate after each hidden layer in training (default 0).
  """

  image_hidden: Sequence[int] = (2048,)
  text_hidden: Sequence[int] = (2048,)
  embed_dim: int = 512
  dropout: float = 0.0

  def setup(self):
    self.image_branch = Branch(tuple(self.image_hidden), self.embed_dim, self.dropout)
    self.text_branch = Branch(tuple(self.text_hidden), self.embed_dim, self.dropout)

  def encode_image(self, images: jax.Array, train: bool = False) -> jax.Array:
    return self.image_branch(images, train)

  def encode_text(self, texts: jax.Array, train: bool = False) -> jax.Array:
    return self.text_branch(texts, train)

  def __call__(
    self, images: jax.Array, texts: jax.Array, train: bool = False
  ) -> tuple[jax.Array, jax.Array]:
    return self.encode_image(images, train), self.encode_text(texts, train)
