"""Settings that cannot be meant are refused where the config is read, in one line
``config.FIELD: expected ..., got ...``; every shipped config passes."""

import itertools
import json

import ml_collections
import pytest

from configs import default, paper, shapes
from jitr.experiment.run_config import REQUIRED_FIELDS, check_train_config
from jitr.experiment.workdir import read_trained_config
from jitr.models.model_settings import check_model_settings
from tests.bert_folder import write_bert_folder


def _shipped_configs(bert=""):
  yield "configs/default.py", default.get_config()
  for name, model in itertools.product(shapes.VARIANTS, shapes.MODELS):
    if not shapes.fits(name, model):
      continue
    yield f"configs/shapes.py:{name},{model}", shapes.get_config(f"{name},{model}")
  for spec in paper.specs():
    config = paper.get_config(spec)
    config.precomp_root = "/data/precomp"  # required for precomp data; never read here
    config.labelled.folder = "/data/wiki"  # required for labelled vectors; never read here
    if config.model.get("name") == "vseinf":  # the official VSE∞ needs a BERT folder
      config.text.pretrained = str(bert)
    yield f"configs/paper.py:{spec}", config


def test_every_shipped_config_passes(tmp_path):
  checked = 0
  for name, config in _shipped_configs(write_bert_folder(tmp_path / "bert")):
    try:
      check_train_config(config)
    except ValueError as err:
      raise AssertionError(f"{name}: {err}") from None
    checked += 1
  paper_rows = (2 * 7 + len(paper.IAPRTC12_SETTINGS)) * len(paper.LOSSES)
  paper_rows += 2 * len(paper.LABELLED_LOSSES)  # CMAL²R's wiki and pascal, twobranch
  assert len(paper.specs()) == paper_rows
  tower_rows = len(shapes.TOWER_VARIANTS) * len(shapes.MODELS) - len(shapes.TOWER_VARIANTS)
  shapes_rows = len(shapes.VARIANTS) * len(shapes.MODELS) - tower_rows  # the others: vit only
  assert checked == 1 + shapes_rows + paper_rows


def _with(config, dotted: str, value) -> ml_collections.ConfigDict:
  """``config`` with ``dotted`` set to ``value`` as a config file would write it (a
  ConfigDict refuses to change a field's type once set)."""
  raw = config.to_dict()
  *groups, field = dotted.split(".")
  node = raw
  for group in groups:
    node = node[group]
  node[field] = value
  return ml_collections.ConfigDict(raw)


NAN = float("nan")
REFUSED = [
  (
    "optimizer.learning_rate",
    0.0,
    "config.optimizer.learning_rate: expected a finite number > 0, got 0.0",
  ),
  (
    "optimizer.learning_rate",
    -5e-4,
    "config.optimizer.learning_rate: expected a finite number > 0, got -0.0005",
  ),
  (
    "optimizer.learning_rate",
    NAN,
    "config.optimizer.learning_rate: expected a finite number > 0, got nan",
  ),
  (
    "optimizer.learning_rate",
    "5e-4",
    "config.optimizer.learning_rate: expected a finite number > 0, got '5e-4' (str)",
  ),
  (
    "optimizer.grad_clip",
    -1.0,
    "config.optimizer.grad_clip: expected a finite number >= 0, got -1.0",
  ),
  (
    "optimizer.grad_clip",
    float("inf"),
    "config.optimizer.grad_clip: expected a finite number >= 0, got inf",
  ),
  (
    "optimizer.module_lr_factors",
    {"bert": 0.0},
    "config.optimizer.module_lr_factors.bert: expected a finite number > 0, got 0.0",
  ),
  (
    "optimizer.module_lr_factors",
    0.1,
    "config.optimizer.module_lr_factors: expected an object {module: factor}, got 0.1",
  ),
  (
    "loss.smooth_ndcg.weight",
    -1.0,
    "config.loss.smooth_ndcg.weight: expected a finite number >= 0, got -1.0",
  ),
  (
    "loss.smooth_ndcg.weight",
    NAN,
    "config.loss.smooth_ndcg.weight: expected a finite number >= 0, got nan",
  ),
  (
    "loss.smooth_ndcg.weight",
    True,
    "config.loss.smooth_ndcg.weight: expected a finite number >= 0, got True (bool)",
  ),
  (
    "loss.smooth_ndcg.weight",
    "1.0",
    "config.loss.smooth_ndcg.weight: expected a finite number >= 0, got '1.0' (str)",
  ),
  (
    "loss.triplet.margin",
    -0.2,
    "config.loss.triplet.margin: expected a finite number >= 0, got -0.2",
  ),
  (
    "loss.warmup.margin",
    NAN,
    "config.loss.warmup.margin: expected a finite number >= 0, got nan",
  ),
  (
    "loss.smooth_ndcg.temperature",
    0.0,
    "config.loss.smooth_ndcg.temperature: expected a finite number > 0, got 0.0",
  ),
  (
    "loss.smooth_ndcg.temperature",
    True,
    "config.loss.smooth_ndcg.temperature: expected a finite number > 0, got True (bool)",
  ),
  (
    "model.embed_dim",
    "16",
    "config.model.embed_dim: expected a whole number, got '16' (str)",
  ),
  (
    "model.text",
    7,
    "config.model.text: expected a string, got 7 (int)",
  ),
  (
    "model.embed_size",
    16,
    "config.model.embed_size: not a setting of the 'vse' network; expected one of dtype, "
    "embed_dim, image, image_pooling, text, text_pooling, unroll, word_dim",
  ),
  (
    "model",
    "vse",
    "config.model: expected an object, got 'vse' (str)",
  ),
  (
    "dataset",
    ["jitr_shapes"],
    "config.dataset: expected a string, got ['jitr_shapes'] (list)",
  ),
  (
    "compilation_cache",
    "yes",
    "config.compilation_cache: expected True or False, got 'yes' (str)",
  ),
  (
    "token_buckets",
    (8, 0),
    "config.token_buckets: expected a list of whole numbers >= 1 (caption widths), or () for "
    "the split's longest caption, got (8, 0)",
  ),
  (
    "token_buckets",
    16,
    "config.token_buckets: expected a list of whole numbers >= 1 (caption widths), or () for "
    "the split's longest caption, got 16",
  ),
  (
    "token_chunks",
    0,
    "config.token_chunks: expected a whole number >= 1, got 0",
  ),
  (
    "token_chunks",
    3,
    "config.token_chunks: expected a divisor of config.batch_size (128), got 3",
  ),
  (
    "grad_chunks",
    0,
    "config.grad_chunks: expected a whole number >= 1, got 0",
  ),
  (
    "grad_chunks",
    3,
    "config.grad_chunks: expected a divisor of config.batch_size (128), got 3",
  ),
  (
    "query_chunks",
    0,
    "config.query_chunks: expected a whole number >= 1, got 0",
  ),
  (
    "query_chunks",
    3,
    "config.query_chunks: expected a divisor of config.batch_size (128), got 3",
  ),
  (
    "test_split",
    "val",
    "config.test_split: expected one of 'test' (the splits of jitr_shapes), got 'val'",
  ),
  (
    "num_epochs",
    1,
    "config.loss.triplet.from_epoch: expected less than config.num_epochs (1), got 1: "
    "the term would never train; raise num_epochs or lower from_epoch",
  ),
]


@pytest.mark.parametrize("field,value,message", REFUSED)
def test_a_setting_that_cannot_be_meant_is_one_line(field, value, message):
  config = _with(default.get_config(), field, value)
  with pytest.raises(ValueError) as err:
    check_train_config(config)
  assert str(err.value) == message


@pytest.mark.parametrize(
  ("field", "network", "message"),
  [
    (
      "query_chunks",
      "saf",
      "config.query_chunks: the 'saf' network scores each (image, caption) pair itself; "
      "expected 1, or a network that scores embeddings",
    ),
    (
      "token_chunks",
      "sgr",
      "config.token_chunks: the 'sgr' network does not encode its captions in chunks; "
      "expected 1, or a network of ['vse', 'vseinf']",
    ),
  ],
)
def test_chunks_need_a_network_that_takes_them(field, network, message):
  config = _with(default.get_config(), field, 4)
  check_train_config(config)  # the default network, VSE++, takes both
  config = _with(config, "model", {"name": network})
  with pytest.raises(ValueError) as err:
    check_train_config(config)
  assert str(err.value) == message


@pytest.mark.parametrize(
  ("field", "value"),
  [
    ("token_chunks", 1),
    ("grad_chunks", 1),
    ("query_chunks", 1),
    ("train_fraction", 1.0),
    ("eval_every_steps", 0),
  ],
)
def test_a_config_json_written_without_a_later_field_reads_as_its_run_had(tmp_path, field, value):
  raw = default.get_config().to_dict()
  del raw[field]  # a workdir an earlier jitr wrote
  (tmp_path / "config.json").write_text(json.dumps(raw))
  assert read_trained_config(str(tmp_path))[field] == value
  with pytest.raises(ValueError, match=f"config.{field}: missing"):
    check_train_config(ml_collections.ConfigDict(raw))  # a config file still needs it


@pytest.mark.parametrize("field", ["model", "dataset", "loss", "batch_size"])
def test_a_missing_field_is_named_with_what_it_holds(field):
  raw = default.get_config().to_dict()
  kind = REQUIRED_FIELDS[field]
  del raw[field]
  with pytest.raises(ValueError) as err:
    check_train_config(ml_collections.ConfigDict(raw))
  assert str(err.value) == f"config.{field}: missing; expected {kind} (see configs/default.py)"


def test_every_model_setting_of_every_network_is_checked_by_its_default_type():
  # A setting whose default is a whole number refuses a float; a float setting takes an int.
  check_model_settings({"name": "sgr", "smooth": 9, "sgr_step": 2})
  with pytest.raises(ValueError, match=r"config.model.sgr_step: expected a whole number, got 2.0"):
    check_model_settings({"name": "sgr", "sgr_step": 2.0})
  with pytest.raises(ValueError, match=r"config.model.fc_l2norm: expected True or False, got 1"):
    check_model_settings({"name": "vsrn", "fc_l2norm": 1})
  with pytest.raises(ValueError, match=r"config.model.caption_weight: expected a finite number"):
    check_model_settings({"name": "vsrn", "caption_weight": float("nan")})
  with pytest.raises(
    ValueError, match=r"config.model.name: expected one of \[.clip., .cvse., .saf., "
  ):
    check_model_settings({"name": "scan"})


@pytest.mark.parametrize(
  "spec,field,value,message",
  [
    (
      "sam",
      "loss.sam.max_margin",
      -1.0,
      "config.loss.sam.max_margin: expected a finite number >= 0, got -1.0",
    ),
    (
      "sam",
      "loss.sam.keep_triplet",
      "False",
      "config.loss.sam.keep_triplet: expected True or False, got 'False' (str)",
    ),
    (
      "sam",
      "loss.sam.temperature",
      True,
      "config.loss.sam.temperature: expected a finite number > 0, got True (bool)",
    ),
    (
      "lseh",
      "loss.lseh.margin",
      -0.185,
      "config.loss.lseh.margin: expected a finite number >= 0, got -0.185",
    ),
    (
      "cmal2r",
      "loss.adaptive_listwise.sharpness",
      0,
      "config.loss.adaptive_listwise.sharpness: expected a finite number > 0, got 0",
    ),
  ],
)
def test_each_loss_terms_settings_are_checked(spec, field, value, message):
  config = _with(shapes.get_config(spec), field, value)
  with pytest.raises(ValueError) as err:
    check_train_config(config)
  assert str(err.value) == message


def test_a_test_split_the_precomp_dataset_lacks_names_its_splits():
  config = paper.get_config("f30k,vsepp,triplet")
  config.precomp_root = "/data/precomp"
  config.test_split = "testall"
  with pytest.raises(ValueError) as err:
    check_train_config(config)
  assert str(err.value) == (
    "config.test_split: expected one of 'train', 'dev', 'test' (the splits of f30k_precomp), "
    "got 'testall'"
  )
  config = paper.get_config("coco,vsepp,triplet")
  config.precomp_root = "/data/precomp"
  check_train_config(config)  # testall: COCO's 5K test
  assert config.test_split == "testall"


def test_zero_weights_margins_and_grad_clip_are_valid():
  config = default.get_config()
  config.optimizer.grad_clip = 0.0  # no clipping
  config.loss.smooth_ndcg.weight = 0.0
  config.loss.triplet.margin = 0.0
  config.optimizer.learning_rate = 1  # a whole number is a number
  check_train_config(config)


def test_a_term_that_starts_before_the_last_epoch_is_valid():
  config = default.get_config()
  config.num_epochs = 2  # triplet from epoch 1: trains during the second epoch
  check_train_config(config)
  config.loss.triplet.from_epoch = 2
  with pytest.raises(ValueError, match=r"^config\.loss\.triplet\.from_epoch: .*got 2: "):
    check_train_config(config)
