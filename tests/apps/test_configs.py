import pytest

from configs import default, paper, shapes
from jitr import losses
from jitr.training.graded import parse_source


@pytest.mark.parametrize("name", shapes.VARIANTS)
def test_shapes_variants_build_valid_objectives(name):
  config = shapes.get_config(name)
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
    if losses.LOSSES[term.get("loss", term_name)][1] is not None:  # the term reads a graded matrix
      assert term.get("input", "relevance") in config.graded, (name, term_name)


def test_paper_settings():
  c = paper.get_config("coco,vseinf,sam")
  assert (c.dataset, c.test_split, c.eval_folds) == ("coco_precomp", "testall", 5)
  assert (
    c.optimizer.name,
    c.optimizer.learning_rate,
    tuple(c.optimizer.decay_epochs),
    c.num_epochs,
  ) == ("adamw", 5e-4, (15,), 30)
  assert c.model.image_pooling == "gpo" and c.model.text == "bigru"
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
