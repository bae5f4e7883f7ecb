"""A Hugging Face CLIP folder (transformers' ``CLIPModel.save_pretrained``) imported by
``load_hf_clip`` gives transformers' own image and text features, in the open_clip parity
environment (transformers with PyPI's torch)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import torch

from jitr.models.clip import ClipModel
from jitr.models.clip.weights import load_hf_clip
from tests.models.clip.tiny_clip import inputs

pytestmark = pytest.mark.open_clip


def _hf_model(tmp_path):
  from transformers import CLIPConfig, CLIPModel

  text = {"vocab_size": 50, "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2}
  text |= {"num_attention_heads": 2, "max_position_embeddings": 12, "eos_token_id": 49}
  vision = {"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2}
  vision |= {"num_attention_heads": 2, "image_size": 32, "patch_size": 8}
  torch.manual_seed(0)
  model = CLIPModel(CLIPConfig(text_config=text, vision_config=vision, projection_dim=16)).eval()
  with torch.no_grad():
    for p in model.parameters():
      p.add_(0.05 * torch.randn_like(p))
  model.save_pretrained(tmp_path)
  return model


def _features(output):
  return (output if torch.is_tensor(output) else output.pooler_output).double().numpy()


def test_hugging_face_clip_equals_transformers(tmp_path):
  model = _hf_model(tmp_path)
  imported = load_hf_clip(tmp_path)
  config = imported.config
  assert (config.vision.act, config.text.act, config.embed_dim) == ("quick_gelu", "quick_gelu", 16)
  assert imported.source.endswith("model.safetensors")
  images, tokens = inputs(config)
  with torch.no_grad():
    u = _features(
      model.get_image_features(
        pixel_values=torch.from_numpy(np.array(images).transpose(0, 3, 1, 2).copy())
      )
    )
    v = _features(model.get_text_features(input_ids=torch.from_numpy(np.array(tokens)).long()))
  variables = {"params": jax.tree.map(jnp.asarray, imported.params)}
  ours_u = ClipModel(config).apply(variables, images, method=ClipModel.encode_image)
  ours_v = ClipModel(config).apply(variables, tokens, method=ClipModel.encode_text)
  np.testing.assert_allclose(ours_u, u, rtol=1e-5, atol=1e-5)
  np.testing.assert_allclose(ours_v, v, rtol=1e-5, atol=1e-5)
  np.testing.assert_allclose(imported.params["logit_scale"], model.logit_scale.item(), rtol=1e-7)
