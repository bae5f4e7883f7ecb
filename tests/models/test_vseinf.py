"""VSE∞ (``"vseinf"``) against the official modules transcribed in PyTorch
(tests/models/vseinf_reference.py, transformers' ``BertModel`` inside the text tower):
both towers in eval mode, the image tower's BatchNorm in train mode, the official
AdamW's parameter groups, the registry entry and its ``pretrained`` folder."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

from configs import default  # noqa: E402
from jitr import training  # noqa: E402
from jitr.models.bert import BertConfig, bert_params  # noqa: E402
from jitr.models.model_settings import check_model_settings  # noqa: E402
from jitr.models.registry import MODELS  # noqa: E402
from jitr.models.vseinf import create_vseinf, vseinf_model  # noqa: E402
from jitr.models.vseinf.convert import official_variables  # noqa: E402
from tests.models import vseinf_reference as ref  # noqa: E402

VOCAB, HIDDEN, LAYERS, HEADS, FFN = 50, 32, 2, 4, 37
IMG_DIM, EMBED = 12, 16
SETTINGS = dict(
  embed_dim=EMBED,
  img_dim=IMG_DIM,
  bert_hidden=HIDDEN,
  bert_layers=LAYERS,
  bert_heads=HEADS,
  bert_intermediate=FFN,
)
BERT = BertConfig(VOCAB, HIDDEN, LAYERS, HEADS, FFN)


def _batch(seed=0):
  """Three pairs: 5 region slots (3, 5, 4 valid, padding zero) and captions of 4, 6, 3
  WordPiece ids ([CLS] ... [SEP], 0-padded to 7)."""
  rng = np.random.default_rng(seed)
  region_lengths = np.array([3, 5, 4])
  images = rng.normal(size=(3, 5, IMG_DIM)).astype(np.float32)
  mask = np.arange(5)[None] < region_lengths[:, None]
  images = np.where(mask[..., None], images, 0.0).astype(np.float32)
  lengths = np.array([4, 6, 3])
  tokens = rng.integers(3, VOCAB, size=(3, 7))
  tokens[:, 0] = 1  # [CLS]
  tokens[np.arange(3), lengths - 1] = 2  # [SEP]
  tokens = np.where(np.arange(7)[None] < lengths[:, None], tokens, 0)
  return dict(images=images, image_mask=mask, tokens=tokens, lengths=lengths), region_lengths


def _official(seed=0):
  """The official towers at the test's sizes, random weights, BatchNorm statistics and
  affine away from their starting values (so eval mode reads them)."""
  torch.manual_seed(seed)
  img = ref.EncoderImageAggr(IMG_DIM, EMBED)
  txt = ref.EncoderText(EMBED, ref.bert_model(VOCAB, HIDDEN, LAYERS, HEADS, FFN))
  with torch.no_grad():
    for bn in img.mlp.bns:
      bn.running_mean.normal_(0.0, 0.5)
      bn.running_var.uniform_(0.5, 2.0)
      bn.weight.normal_(1.0, 0.3)
      bn.bias.normal_(0.0, 0.3)
  return img, txt


def _jitr(img, txt):
  module, _ = create_vseinf(vocab_size=VOCAB, **SETTINGS)
  variables = official_variables(img.state_dict(), txt.state_dict(), BERT)
  return vseinf_model(module), jax.tree.map(jnp.asarray, variables)


def _torch_batch(batch, region_lengths):
  return (
    torch.tensor(batch["images"]),
    torch.tensor(region_lengths),
    torch.tensor(batch["tokens"]),
    torch.tensor(batch["lengths"]),
  )


def test_both_towers_equal_the_official_modules_in_eval_mode():
  img, txt = _official()
  model, variables = _jitr(img, txt)
  batch, region_lengths = _batch()
  images, image_lengths, tokens, lengths = _torch_batch(batch, region_lengths)
  img.eval(), txt.eval()
  with torch.no_grad():
    want_img = img(images, image_lengths).numpy()
    want_txt = txt(tokens, lengths).numpy()
  got_img = model.encode_images(variables, batch["images"], batch["image_mask"])
  got_txt = model.encode_captions(variables, batch["tokens"], batch["lengths"])
  np.testing.assert_allclose(got_img, want_img, atol=1e-5)
  np.testing.assert_allclose(got_txt, want_txt, atol=1e-5)
  np.testing.assert_allclose(np.linalg.norm(got_img, axis=-1), 1.0, atol=1e-6)


def test_image_tower_in_train_mode_equals_the_official_batch_norm():
  """Train mode: the MLP's BatchNorm normalises by the batch's moments over all B·R rows
  (padding included, as the official reshape does) and updates the running statistics."""
  img, txt = _official(1)
  model, variables = _jitr(img, txt)
  batch, region_lengths = _batch(1)
  images, image_lengths, _, _ = _torch_batch(batch, region_lengths)
  img.train()
  with torch.no_grad():
    want = img(images, image_lengths).numpy()
  out, state = model.forward(
    variables, batch, train=True, rngs={"dropout": jax.random.key(0)}, axis_name=None
  )
  np.testing.assert_allclose(out.images, want, atol=1e-5)
  stats = state["batch_stats"]["image_encoder"]["mlp"]["bns_0"]
  np.testing.assert_allclose(stats["mean"], img.mlp.bns[0].running_mean.numpy(), atol=1e-6)
  np.testing.assert_allclose(stats["var"], img.mlp.bns[0].running_var.numpy(), atol=1e-5)
  assert out.captions.shape == (3, EMBED)


OPTIMIZER = {  # configs/default.py's group as lib/vse.py's AdamW sets it
  **default.get_config().optimizer.to_dict(),
  "name": "adamw",
  "learning_rate": 0.01,
  "weight_decay": 1e-4,
  "grad_clip": 2.0,
  "decay_epochs": (),
  "module_lr_factors": {"bert": 0.1},
}


def test_bert_group_learns_at_a_tenth_as_the_official_adamw():
  """Three steps of the same (clipped) gradients: jitr's AdamW with ``module_lr_factors =
  {"bert": 0.1}`` lands on the parameters of the official ``VSEModel`` AdamW's three
  parameter groups (BERT at 0.1 lr; weight decay 1e-4 on every parameter)."""
  img, txt = _official(2)
  _, variables = _jitr(img, txt)
  params = variables["params"]
  tx = training.make_optimizer(OPTIMIZER, steps_per_epoch=10)
  opt_state = tx.init(params)
  update = jax.jit(tx.update)  # one program, not one dispatch per leaf and operation
  optimizer = ref.official_optimizer(img, txt, OPTIMIZER["learning_rate"])
  torch_params = [p for group in optimizer.param_groups for p in group["params"]]
  rng = np.random.default_rng(0)
  for _ in range(3):
    grads = [rng.normal(0.0, 0.05, p.shape).astype(np.float32) for p in torch_params]
    for p, g in zip(torch_params, grads):
      p.grad = torch.tensor(g)
    torch.nn.utils.clip_grad_norm_(torch_params, OPTIMIZER["grad_clip"])
    optimizer.step()
    # the same gradients in jitr's tree: the official towers converted back
    as_params = official_variables(
      _grads_as_state(img, dict(zip(map(id, torch_params), grads))),
      _grads_as_state(txt, dict(zip(map(id, torch_params), grads))),
      BERT,
    )["params"]
    updates, opt_state = update(jax.tree.map(jnp.asarray, as_params), opt_state, params)
    params = jax.tree.map(lambda p, u: p + u, params, updates)
  want = official_variables(img.state_dict(), txt.state_dict(), BERT)["params"]
  jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, atol=2e-6), params, want)
  moved = jax.tree.map(lambda a, b: float(jnp.max(jnp.abs(a - b))), params, variables["params"])
  assert max(jax.tree.leaves(moved["bert"])) < 0.2 * max(jax.tree.leaves(moved["image_encoder"]))


def _grads_as_state(module, grads_by_id):
  """``module.state_dict()`` with each parameter replaced by its gradient (buffers kept)."""
  state = dict(module.state_dict(keep_vars=True))
  return {
    k: (grads_by_id[id(v)] if id(v) in grads_by_id else v.detach().numpy())
    for k, v in state.items()
  }


def test_registry_builds_vseinf_through_the_one_signature():
  check_model_settings({"name": "vseinf", **SETTINGS, "remat": True})
  model = MODELS["vseinf"](SETTINGS, VOCAB, {})
  batch, _ = _batch()
  shapes = jax.eval_shape(model.init, jax.random.key(0), batch)
  assert sorted(shapes["params"]) == ["bert", "image_encoder", "text_encoder"]
  assert shapes["params"]["bert"]["embeddings"]["word_embeddings"]["embedding"].shape == (
    VOCAB,
    HIDDEN,
  )
  assert "batch_stats" in shapes and model.inputs == ("images", "image_mask", "tokens", "lengths")


def test_a_wrong_pretrained_folder_is_one_line(tmp_path):
  """Named by the field a run sets, config.text.pretrained (config.model has none)."""
  with pytest.raises(ValueError) as err:
    MODELS["vseinf"]({"pretrained": str(tmp_path / "nowhere")}, VOCAB, {})
  assert str(err.value) == (
    f"config.text.pretrained: {tmp_path / 'nowhere'}: no such folder (expected a Hugging Face "
    "BERT folder)"
  )


class _System:
  """Unpickles into a call of ``os.system`` (what a weights file must never run)."""

  def __init__(self, command: str):
    self.command = command

  def __reduce__(self):
    import os

    return (os.system, (self.command,))


def test_a_pickle_payload_as_pytorch_model_bin_is_not_a_state_dict(tmp_path):
  """A BERT folder whose pytorch_model.bin would call os.system when unpickled: nothing
  runs, and the file is named as what it is not (never "an official checkpoint")."""
  from tests.bert_folder import write_bert_folder

  folder = write_bert_folder(tmp_path / "bert")
  (folder / "model.safetensors").unlink()
  ran = tmp_path / "ran"
  torch.save(
    {"embeddings.word_embeddings.weight": _System(f"touch {ran}")}, folder / "pytorch_model.bin"
  )
  with pytest.raises(ValueError) as err:
    MODELS["vseinf"]({"pretrained": str(folder)}, VOCAB, {})
  assert str(err.value) == (
    f"config.text.pretrained: {folder / 'pytorch_model.bin'}: not a weights-only PyTorch state "
    "dict (it holds 'posix.system', which jitr does not unpickle); expected the tensors of a "
    "BERT as save_pretrained writes them"
  )
  assert not ran.exists()


def test_pretrained_folder_fills_the_bert_subtree(tmp_path):
  """A Hugging Face folder (``save_pretrained`` of a small random BertModel): ``init``
  puts its weights in ``params["bert"]``; the rest starts as the official code starts it."""
  torch.manual_seed(3)
  bert = ref.bert_model(VOCAB, HIDDEN, LAYERS, HEADS, FFN)
  bert.save_pretrained(tmp_path)
  (tmp_path / "vocab.txt").write_text("".join(f"w{i}\n" for i in range(VOCAB)))
  model = MODELS["vseinf"](
    {"pretrained": str(tmp_path), "embed_dim": EMBED, "img_dim": IMG_DIM}, VOCAB
  )
  batch, _ = _batch()
  variables = model.init(jax.random.key(0), batch)
  want = bert_params(bert.state_dict(), BERT)
  jax.tree.map(np.testing.assert_array_equal, variables["params"]["bert"], want)
  fc = np.asarray(variables["params"]["image_encoder"]["fc"]["kernel"])
  bound = np.sqrt(6.0 / (IMG_DIM + EMBED))  # init_weights: Xavier-uniform, zero bias
  assert np.abs(fc).max() <= bound and np.abs(fc).max() > 0.5 * bound
  assert not np.any(variables["params"]["image_encoder"]["fc"]["bias"])
  for tower in ("image_encoder", "text_encoder"):  # nn.GRU's and nn.Linear's U(±1/sqrt(32))
    gru = np.concatenate(
      [np.ravel(x) for x in jax.tree.leaves(variables["params"][tower]["gpool"])]
    )
    assert np.abs(gru).max() <= 32**-0.5 and np.abs(gru).max() > 0.9 * 32**-0.5
    assert abs(gru.mean()) < 0.01
