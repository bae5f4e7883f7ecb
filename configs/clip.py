"""Fine-tuning a CLIP / SigLIP dual encoder on an image folder with Karpathy's split file.

Use as ``--config=configs/clip.py:LOSS`` with the folder and the weights given, e.g.::

  jitr-train --config=configs/clip.py:infonce+triplet+sndcg --workdir=runs/clip \\
    --config.karpathy.json=flickr30k/dataset_flickr30k.json \\
    --config.karpathy.images=flickr30k/flickr30k-images \\
    --config.model.weights=ViT-B-16/open_clip_pytorch_model.bin \\
    --config.model.tag=laion2b_s34b_b88k

LOSS joins with ``+`` any of ``infonce`` (CLIP's contrastive loss, its temperature the
model's learned ``logit_scale``), ``sigmoid`` (SigLIP's pairwise loss with the learned
scale and bias: a SigLIP tower), ``triplet`` (VSE++'s hardest-negative triplet, margin
0.2) and ``sndcg`` (Smooth-NDCG, τ = 0.01, on the relevance of ``config.graded``: RSC from
Sentence-Transformers); default ``infonce``.

The recipe (open_clip's fine-tuning defaults): ViT-B-16 (``config.model.tower``, any open_clip
name or model config ``.json``), AdamW with β₂ 0.98, ε 1e-6, weight decay 0.2 on matrices only
(open_clip's exclusions: biases, norms, class token, logit scale), learning rate 1e-5 with
500 warmup steps and a cosine down to 0, global-norm clipping at 1, batch 128, 5 epochs, no
augmentation besides open_clip's random-resized crop (scale 0.9–1). LiT (the image tower
locked): ``--config.optimizer.frozen_modules='("visual",)'``.
"""

import ml_collections

from jitr.config_files import sibling_config

default = sibling_config(__file__, "default")

#: The objective term of each LOSS name.
TERMS = {
  "infonce": {"clip": {"loss": "info_nce", "weight": 1.0, "logit_scale": "learned"}},
  "sigmoid": {
    "siglip": {
      "loss": "sigmoid_pairs",
      "weight": 1.0,
      "logit_scale": "learned",
      "logit_bias": "learned",
    }
  },
  "triplet": {"triplet": {"weight": 1.0, "margin": 0.2, "mining": "max"}},
  "sndcg": {"smooth_ndcg": {"weight": 1.0, "temperature": 0.01, "top_m": 0, "window": False}},
}


def loss_terms(spec: str) -> ml_collections.ConfigDict:
  """The objective of ``spec`` (``"infonce+sndcg"``: the terms of each name)."""
  terms = {}
  for name in spec.split("+"):
    if name not in TERMS:
      raise ValueError(f"configs/clip.py: LOSS {name!r}, expected '+'-joined {sorted(TERMS)}")
    terms.update(TERMS[name])
  return ml_collections.ConfigDict(terms)


def get_config(arg: str | None = None) -> ml_collections.ConfigDict:
  c = default.get_config()
  c.dataset = "f30k_images"  # any NAME_images; coco_images for COCO (test: Karpathy's 5K)
  c.karpathy.json = ""  # Karpathy's split file (required)
  c.karpathy.images = ""  # the folder of its images (required)
  c.model = ml_collections.ConfigDict(
    dict(
      name="clip",
      tower="ViT-B-16",  # an open_clip model name or model config .json
      weights="",  # open_clip state dict or Hugging Face CLIP folder ("": random towers)
      tag="",  # the weights' open_clip pretrained tag: their activation and preprocessing
      tokenizer="",  # "": CLIP's BPE; a Hugging Face tokenizer folder for SigLIP
      max_layers=0,  # at most this many blocks per tower (0: all)
      dtype="float32",  # "bfloat16" on accelerators
      remat=False,  # recompute each block in the backward pass (less memory)
    )
  )
  c.loss = loss_terms(arg or "infonce")
  c.optimizer.name = "adamw"
  c.optimizer.learning_rate = 1e-5
  c.optimizer.weight_decay = 0.2
  c.optimizer.b2 = 0.98
  c.optimizer.eps = 1e-6
  c.optimizer.decay_matrices_only = True
  c.optimizer.schedule = "cosine"
  c.optimizer.warmup_steps = 500
  c.optimizer.grad_clip = 1.0
  c.optimizer.decay_epochs = ()
  c.batch_size = 128
  c.num_epochs = 5
  c.eval_batch_size = 256
  c.vocab_min_coverage = 0.0  # the tower's BPE knows every word
  return c
