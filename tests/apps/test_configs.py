import pathlib

import pytest

from configs import default, paper, shapes
from jitr import losses
from jitr.training.graded import parse_source


@pytest.mark.parametrize("name", shapes.VARIANTS)
def test_shapes_variants_build_valid_objectives(name):
  config = shapes.get_config(name if shapes.fits(name, "vse") else f"{name},vit")
  losses.objective(config.loss, steps_per_epoch=10)  # raises on an unknown loss or bad term
  hard = {"triplet", "sam", "lseh"} & set(config.loss)
  if hard:  # VSE∞'s warm-up: sum of hinges for epoch 0, the hardest-negative terms after
    assert config.loss.warmup.mining == "sum" and config.loss.warmup.until_epoch == 1
    assert all(config.loss[t].from_epoch == 1 for t in hard)
  else:
    assert "warmup" not in config.loss
  for source in dict(config.graded).values():
    parse_source(source)
  for term_name, term in config.loss.to_dict().items():
    if losses.LOSSES[term.get("loss", term_name)].graded is not None:  # reads a graded matrix
      assert term.get("input", "relevance") in config.graded, (name, term_name)


def test_coverage_rows_calibrate_token_coverage_and_weigh_smooth_ndcg():
  for name, calibration, weight in [
    ("coverage", "", 1.0),
    ("coverage_sharp", "minmax,power:8", 1.0),
    ("coverage_sharp_w075", "minmax,power:8", 0.75),
  ]:
    c = shapes.get_config(name)
    assert c.graded.relevance == "coverage:tokens" and c.calibration.relevance == calibration
    assert (c.loss.smooth_ndcg.weight, c.loss.triplet.weight) == (weight, 1.0), name


def test_shapes_variants_come_from_the_overrides_table():
  assert shapes.VARIANTS == tuple(shapes.OVERRIDES)
  assert set(shapes.TEACHER_SOURCES) == {"hmean", "teacher", "coverage_hmean"}
  assert shapes.get_config("sndcg").to_dict() == default.get_config().to_dict()
  c = shapes.get_config("hmean")
  assert c.graded.to_dict() == {"relevance": shapes.teacher_relevance("hmean")}
  assert c.graded.relevance == "hmean:vectors:sentence|teacher:workdirs/shapes/triplet"
  assert "warmup" not in shapes.get_config("cmal2r").loss


@pytest.mark.parametrize("spec", ["nope", "sndcg,vsepp", "sndcg,vse,x"])
def test_shapes_unknown_variant_or_model_names_the_valid_ones(spec):
  with pytest.raises(ValueError, match="NAME one of .*'coverage_hmean'.* MODEL one of .*'vsrn'"):
    shapes.get_config(spec)


def test_paper_settings():
  c = paper.get_config("coco,vseinf_bigru,sam")
  assert (c.dataset, c.test_split, c.eval_folds) == ("coco_precomp", "testall", 5)
  assert (
    c.optimizer.name,
    c.optimizer.learning_rate,
    tuple(c.optimizer.decay_epochs),
    c.num_epochs,
  ) == ("adamw", 5e-4, (15,), 30)
  assert c.model.image_pooling == "gpo" and c.model.text == "bigru"
  assert "warmup" in paper.get_config("f30k,vseinf_bigru,triplet").loss
  c = paper.get_config("f30k,vsepp,lseh")
  assert (
    c.optimizer.name,
    c.optimizer.grad_clip,
    c.num_epochs,
    c.batch_size,
    c.model.embed_dim,
  ) == ("adam", 2.0, 20, 128, 1024)
  assert c.estimators.lsa.k == 400 and c.graded.semantic == "cosine:lsa"
  assert set(c.loss) == {"lseh"} and "from_epoch" not in c.loss.lseh  # VSE++: no warm-up
  assert "warmup" in paper.get_config("f30k,vseinf,triplet").loss  # VSE∞'s warm-up
  with pytest.raises(ValueError, match="DATA,MODEL,LOSS"):
    paper.get_config("f30k")
  with pytest.raises(ValueError, match="LOSS"):
    paper.get_config("f30k,vsepp,oracle")


def test_default_is_triplet_plus_smooth_ndcg_on_sentence_relevance():
  c = default.get_config()
  assert (
    set(c.loss) == {"warmup", "triplet", "smooth_ndcg"} and c.graded.relevance == "vectors:sentence"
  )


def test_paper_vseinf_is_the_official_network_and_needs_a_bert_folder():
  """woodfrog/vse_infty train_region.sh + README: 25 epochs, ×0.1 at 15, AdamW 5e-4 (decay
  1e-4), the BERT at × 0.1, batch 128, clip 2, embed 1024, 0.2 word and region
  augmentation, one warm-up epoch of sum-of-hinges."""
  from jitr.experiment.run_config import check_train_config

  c = paper.get_config("f30k,vseinf,triplet")
  assert c.model.to_dict() == {
    "name": "vseinf",
    "embed_dim": 1024,
    "img_dim": 2048,
    "dtype": "float32",
    "remat": False,
  }
  o = c.optimizer
  assert (o.name, o.learning_rate, o.weight_decay, o.grad_clip) == ("adamw", 5e-4, 1e-4, 2.0)
  assert (tuple(o.decay_epochs), o.decay_factor, o.module_lr_factors.to_dict()) == (
    (15,),
    0.1,
    {"bert": 0.1},
  )
  assert (c.num_epochs, c.batch_size) == (25, 128)
  assert (c.text.word_augment, c.image.region_drop, c.text.pretrained) == (0.2, 0.2, "")
  assert c.loss.warmup.mining == "sum" and c.loss.triplet.from_epoch == 1
  c.precomp_root = "/data/precomp"
  with pytest.raises(ValueError) as err:
    check_train_config(c)
  assert str(err.value) == (
    "config.text.pretrained: the 'vseinf' network needs a Hugging Face BERT folder; give "
    "--config.text.pretrained=FOLDER"
  )


def test_paper_vseinf_takes_bfloat16_and_remat_from_the_command_line():
  """``--config.model.dtype=bfloat16 --config.model.remat=True`` (and jitr-tables'
  ``--set``) reach the VSE∞ module, which hands them to its BERT."""
  import jax.numpy as jnp

  from jitr.models.registry import make_model

  c = paper.get_config("f30k,vseinf,triplet")
  c.model.dtype, c.model.remat = "bfloat16", True
  module = make_model(c.model.to_dict(), 30522).module
  assert (module.dtype, module.remat) == (jnp.bfloat16, True)
  c = paper.get_config("f30k,vseinf,triplet")
  assert make_model(c.model.to_dict(), 30522).module.dtype == jnp.float32


@pytest.mark.parametrize(
  ("spec", "lr", "decay", "epochs", "batch"),
  [
    ("f30k,sgr,triplet", 2e-4, (30,), 40, 128),
    ("f30k,saf,sndcg", 2e-4, (20,), 30, 128),
    ("coco,sgr,sam", 2e-4, (10,), 20, 128),
    ("coco,saf,cmal2r", 2e-4, (10,), 20, 128),
    ("f30k,sgr,lseh", 4e-4, (20,), 40, 84),  # the LSEH repository's SGRAF settings
    ("f30k,vsrn,triplet", 2e-4, (10, 20), 30, 128),
    ("coco,vsrn,sndcg", 2e-4, (15,), 30, 128),
  ],
)
def test_paper_similarity_and_vsrn_settings(spec, lr, decay, epochs, batch):
  """The official schedules (SGRAF opts.py/README, LSEH's SGRAF_LSEH, VSRN README) and a
  model the registry builds; max-violation from the first step (no warm-up)."""
  from jitr.models import make_model

  c = paper.get_config(spec)
  assert (c.optimizer.name, c.optimizer.learning_rate, c.optimizer.grad_clip) == ("adam", lr, 2.0)
  assert (tuple(c.optimizer.decay_epochs), c.num_epochs, c.batch_size) == (decay, epochs, batch)
  assert "warmup" not in c.loss and all("from_epoch" not in t for t in c.loss.values())
  model = make_model(c.model.to_dict(), vocab_size=50)
  data, name, _ = spec.split(",")
  assert model.pairwise == (name in ("sgr", "saf"))
  if name == "vsrn":
    assert (model.module.embed_dim, model.module.feature_batch_norm) == (2048, data == "f30k")
    assert model.aux_weights == {"caption": 1.0}
  else:
    assert (model.module.module, model.module.embed_dim, model.module.sim_dim) == (
      name.upper(),
      1024,
      256,
    )
  if spec.endswith("lseh"):
    assert c.loss.lseh.margin == 0.185


@pytest.mark.parametrize("model_name", ["vse", "sgr", "saf", "vsrn"])
def test_shapes_rows_take_a_model(model_name):
  from jitr.models import make_model

  c = shapes.get_config(f"sndcg,{model_name}")
  assert set(c.loss) == set(shapes.get_config("sndcg").loss)
  model = make_model(c.model.to_dict(), vocab_size=50)
  assert model.pairwise == (model_name in ("sgr", "saf"))
  if model_name == "vse":
    assert c.model.to_dict() == default.get_config().model.to_dict()
  with pytest.raises(ValueError, match="MODEL"):
    shapes.get_config("sndcg,vsepp")


def test_pod_check_is_a_tiny_listwise_run_on_the_exact_relevance():
  from configs import pod_check
  from jitr.experiment.run_config import check_train_config

  c = pod_check.get_config()
  check_train_config(c)  # raises on any bad field
  assert (c.dataset, c.shapes_config, dict(c.graded)) == (
    "jitr_shapes",
    "tiny",
    {"relevance": "oracle"},
  )
  assert set(c.loss) == {"warmup", "triplet", "smooth_ndcg"} and c.num_epochs == 3
  # the global batch splits over 1 x 8, 2 x 4, 4 x 8 and 8 x 8 (processes x devices)
  assert all(c.batch_size % (p * d) == 0 for p, d in [(1, 8), (2, 4), (4, 8), (8, 8)])


def test_the_vseinf_minilm_row_fine_tunes_the_installed_minilm_as_vseinf_is_trained():
  from jitr.experiment.run_config import check_train_config
  from jitr.models.bert import read_config

  c = shapes.get_config("triplet,vseinf_minilm")
  check_train_config(c)  # raises on any bad field
  folder = pathlib.Path(c.text.pretrained)
  bert = read_config(folder / "config.json")
  assert (bert.num_hidden_layers, bert.hidden_size, bert.vocab_size) == (6, 384, 30522)
  assert len((folder / "vocab.txt").read_text(encoding="utf-8").splitlines()) == 30522
  assert (
    c.model.name,
    c.model.img_dim,
    c.text.word_augment,
    c.image.region_drop,
    c.num_epochs,
  ) == ("vseinf", 128, 0.2, 0.2, 2)
  assert (c.optimizer.name, dict(c.optimizer.module_lr_factors)) == ("adamw", {"bert": 0.1})
  assert set(shapes.get_config("sndcg,vseinf_minilm").loss) == set(shapes.get_config("sndcg").loss)


def test_paper_labelled_vectors_settings():
  """CMAL²R's experiments: its loss (α = 0.4, β = 0.5) or VSE++'s triplet on the two-branch
  network; what CMAL²R does not state is jitr's choice (configs/paper.py's docstring)."""
  c = paper.get_config("wiki,twobranch,cmal2r")
  assert (c.dataset, c.model.name, c.model.embed_dim) == ("wiki", "twobranch", 512)
  assert tuple(c.model.image_hidden) == tuple(c.model.text_hidden) == (2048,)
  assert c.loss.to_dict() == {"adaptive_listwise": {"weight": 1.0, "sharpness": 0.5, "alpha": 0.4}}
  assert c.graded.to_dict() == {}
  assert (c.labelled.val_pairs, c.labelled.val_name, c.labelled.positives) == (200, "", "class")
  assert (c.optimizer.name, c.optimizer.learning_rate, tuple(c.optimizer.decay_epochs)) == (
    "adam",
    1e-4,
    (),
  )
  assert (c.batch_size, c.num_epochs, c.test_split, c.eval_folds) == (100, 50, "test", 0)
  c = paper.get_config("pascal,twobranch,triplet")
  assert c.dataset == "pascal" and c.labelled.val_pairs == 500
  assert c.loss.to_dict() == {"triplet": {"weight": 1.0, "margin": 0.2, "mining": "max"}}
  assert "wiki,twobranch,cmal2r" in paper.specs() and "wiki,vsepp,cmal2r" not in paper.specs()


@pytest.mark.parametrize(
  "spec", ["wiki,vsepp,triplet", "f30k,twobranch,triplet", "pascal,twobranch,sndcg"]
)
def test_paper_labelled_vectors_take_the_two_branch_network_and_its_losses(spec):
  with pytest.raises(ValueError) as err:
    paper.get_config(spec)
  assert str(err.value) == (
    "configs/paper.py: DATA ('wiki', 'pascal') (labelled vectors) take MODEL ('twobranch',) "
    "and LOSS one of ('triplet', 'cmal2r'), the other DATA the other MODELs; "
    f"got {spec!r}"
  )
