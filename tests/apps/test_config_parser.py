"""configs/common.py's parse_arg: the one parser of the config files' argument strings
(``--config=configs/paper.py:f30k,vseinf,sndcg``), its forms and its one-line errors, and
every form of configs/paper.py and configs/shapes.py that the docs write."""

import pathlib
import re

import pytest

from configs import common, paper, shapes

REPO = pathlib.Path(__file__).resolve().parents[2]

SPEC = dict(
  name=common.choices("triplet", "sndcg"),
  model=common.choices("vse", "sgr", default="vse"),
  seed=0,
  fast=False,
)
EXPECTED = (
  "configs/x.py: expected NAME[,MODEL][,SEED][,FAST] with NAME one of ('triplet', 'sndcg'), "
  "MODEL one of ('vse', 'sgr'), SEED a whole number and FAST True or False"
)


def _parse(arg):
  return vars(common.parse_arg(arg, config="configs/x.py", **SPEC))


@pytest.mark.parametrize(
  ("arg", "expected"),
  [
    ("triplet", dict(name="triplet", model="vse", seed=0, fast=False)),
    ("sndcg,sgr", dict(name="sndcg", model="sgr", seed=0, fast=False)),
    ("sndcg,sgr,3,True", dict(name="sndcg", model="sgr", seed=3, fast=True)),
    ("triplet,seed=2", dict(name="triplet", model="vse", seed=2, fast=False)),
    ("model=sgr,name=sndcg,fast=True", dict(name="sndcg", model="sgr", seed=0, fast=True)),
    ("name=triplet,sgr", dict(name="triplet", model="sgr", seed=0, fast=False)),
  ],
)
def test_positional_and_key_value_forms(arg, expected):
  assert _parse(arg) == expected


@pytest.mark.parametrize(
  "arg",
  [
    "",  # the required NAME left out
    None,
    "tripplet",  # not a valid value
    "triplet,sgrr",
    "triplet,vse,x",  # not a whole number
    "triplet,vse,1,yes",  # not True / False
    "triplet,vse,1,True,extra",  # more values than fields
    "triplet,",  # an empty part
    "triplet,colour=red",  # an unknown key
    "triplet,name=sndcg",  # a field given twice
    "model=sgr",  # NAME left out
    "model=sgr,triplet",  # a positional value after a key=value
  ],
)
def test_each_bad_form_is_one_line_naming_the_config_and_the_form(arg):
  with pytest.raises(ValueError) as err:
    _parse(arg)
  assert str(err.value) == f"{EXPECTED}; got {arg!r}"


def test_the_config_files_errors_keep_their_text():
  with pytest.raises(ValueError) as err:
    shapes.get_config("tripplet")
  assert str(err.value) == (
    f"configs/shapes.py: expected NAME[,MODEL] with NAME one of {shapes.VARIANTS} and MODEL "
    f"one of {tuple(shapes.MODELS)}; got 'tripplet'"
  )
  with pytest.raises(ValueError) as err:
    shapes.get_config("sigmoid,vse")
  assert str(err.value) == (
    "configs/shapes.py: sigmoid reads the learned temperature of pixel towers: MODEL vit, not vse"
  )
  sigmoid, infonce = shapes.get_config("sigmoid,vit"), shapes.get_config("infonce_sndcg,vit")
  assert (
    sigmoid.model.tower.init_logit_bias == -10.0 and "init_logit_bias" not in infonce.model.tower
  )
  assert (
    set(infonce.loss) == {"clip", "smooth_ndcg"} and infonce.graded.relevance == "vectors:sentence"
  )
  with pytest.raises(ValueError) as err:
    paper.get_config("f30k")
  assert str(err.value) == (
    f"configs/paper.py: expected DATA,MODEL,LOSS with DATA one of {paper.DATASETS}, MODEL "
    f"one of {tuple(paper.MODELS)} and LOSS one of {paper.LOSSES}; got 'f30k'"
  )


def _documented_args(file: str) -> set[str]:
  """Every ``configs/FILE:ARG`` of README.md and docs/*.md with ARG written in lower case
  (a concrete form, not ``NAME[,MODEL]``)."""
  pages = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
  text = "\n".join(p.read_text(encoding="utf-8") for p in pages)
  return set(re.findall(rf"configs/{re.escape(file)}:([a-z0-9_=]+(?:,[a-z0-9_=]+)*)", text))


def test_every_documented_form_loads():
  paper_args, shapes_args = _documented_args("paper.py"), _documented_args("shapes.py")
  assert "f30k,vsepp,sndcg" in paper_args and "sndcg,sgr" in shapes_args
  for arg in paper_args:
    paper.get_config(arg)
  for arg in shapes_args:
    shapes.get_config(arg)
  assert paper.get_config("data=coco,model=cvse,loss=triplet").dataset == "coco_precomp"
  assert shapes.get_config("triplet,model=sgr").model.name == "sgr"


def test_common_is_not_listed_as_a_config_file():
  from jitr.papers import shipped_configs as _config_files

  names = [
    form.partition(":")[0] for form, _ in _config_files.shipped_configs(str(REPO / "configs"))
  ]
  assert "common.py" not in names and "paper.py" in names
