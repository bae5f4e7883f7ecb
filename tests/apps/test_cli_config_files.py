"""The apps' help of a config (``jitr.papers.field_meanings``, ``config_tree``, ``plain_text``,
``shipped_configs``): the meanings of config fields read from a config file's
comments, the config as a tree, help text without Sphinx markup, the shipped files' list."""

import ml_collections
import pytest

from configs import default
from jitr.papers import config_tree as _config_tree
from jitr.papers import field_meanings as _field_meanings
from jitr.papers import plain_text as _plain_text
from jitr.papers import shipped_configs as _config_files
from tests.apps.test_config_paths import REPO

SOURCE = """
import ml_collections

def helper():
  c = ml_collections.ConfigDict()
  c.ignored = 1  # not in get_config


def get_config():
  c = ml_collections.ConfigDict()
  c.seed = 0
  # Where the data is. A second sentence
  # that goes on.
  c.data_dir = ""

  c.top_k = 100  # length of the top-K lists
  # A comment above that the end-of-line one wins over
  c.both = 1  # the end of the line
  c.graded = ml_collections.ConfigDict({"relevance": "x"})  # the graded inputs
  c.model = ml_collections.ConfigDict(
    dict(
      embed_dim=8,  # joint space width
      # the word vectors' width
      word_dim=4,
      image="regions",
    )
  )
  c.model.embed_dim = 16
  c.loss = {
    "triplet": {"margin": 0.2},  # VSE++
  }
  return c
"""


def test_field_meanings_are_the_comments_at_the_end_of_or_above_each_assignment():
  assert _field_meanings.field_meanings(SOURCE) == {
    "data_dir": "Where the data is.",
    "top_k": "length of the top-K lists",
    "both": "the end of the line",
    "graded": "the graded inputs",
    "model.embed_dim": "joint space width",
    "model.word_dim": "the word vectors' width",
    "loss.triplet": "VSE++",
  }


def test_every_top_level_field_of_the_default_config_has_its_meaning():
  meanings = _config_files.file_meanings(str(REPO / "configs" / "default.py"))
  assert meanings["data_dir"] == "TFDS data dir; default: <workdir>/../tfds (shared between runs)"
  assert meanings["estimators.lsa.k"] == (
    "LSEH's 400 needs a richer vocabulary than jitr_shapes' 135 words"
  )
  assert meanings["distributed.heartbeat_timeout_s"] == (
    "a process silent this long is dead: the job stops"
  )
  # every top-level field of the default config says what it is
  assert set(default.get_config().keys()) <= set(meanings)


@pytest.mark.parametrize(
  ("text", "expected"),
  [
    ("One. Two.", "One."),
    ("e.g. --config.x=1 sets it. Next", "e.g. --config.x=1 sets it."),
    ("no period", "no period"),
    (
      "Graded inputs (a: b; c) of the losses: " + "x " * 60,
      "Graded inputs (a: b; c) of the losses",
    ),
    ("word " * 30, ("word " * 19).strip() + "..."),
  ],
)
def test_first_sentence_is_one_line_of_at_most_the_width(text, expected):
  assert _plain_text.first_sentence(text) == expected


def test_plain_text_drops_sphinx_markup():
  rst = (
    "``jitr-train``: see :func:`jitr.experiment.train_and_evaluate`, :mod:`!jitr.x.quality`, "
    ":class:`~jitr.data.Vocab`, :py:func:`f`, ``a`` and ``b``."
  )
  assert _plain_text.plain_text(rst) == (
    "jitr-train: see jitr.experiment.train_and_evaluate, jitr.x.quality, Vocab, f, a and b."
  )


def test_config_tree_indents_groups_and_aligns_meanings():
  config = ml_collections.ConfigDict(
    {"seed": 0, "name": "", "model": {"embed_dim": 8, "pool": {"k": (1, 2)}}, "graded": {}}
  )
  meanings = {"model.embed_dim": "joint space width", "seed": "random seed"}
  assert _config_tree.config_tree(config, meanings) == [
    "graded: {}",
    "model:",
    "  embed_dim: 8   joint space width",
    "  pool:",
    "    k: (1, 2)",
    "name: ''",
    "seed: 0          random seed",
  ]


def test_the_shipped_config_files_are_listed_with_their_argument_forms():
  usages = dict(_config_files.shipped_configs(str(REPO / "configs")))
  assert usages["default.py"].startswith("Default: region encoder + GRU on jitr_shapes")
  assert usages["paper.py:DATA,MODEL,LOSS"] == (
    "The papers' settings on Flickr30K / COCO / IAPR TC-12 features and CMAL²R's labelled vectors."
  )
  assert usages["shapes.py:NAME[,MODEL]"] == "One row per loss and network on jitr_shapes."
