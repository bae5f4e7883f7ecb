"""docs/training.md's commands, those run as they are (``bash`` blocks) and those on a user's
own files (``text`` blocks: Flickr30K's image folder, downloaded weights): every jitr-train
command's config builds as jitr-train builds it (its config file, spec and
``--config.FIELD=VALUE`` overrides) and passes jitr-train's checks; every jitr-eval and
jitr-check-data flag exists."""

import os
import re
import shlex
from pathlib import Path

from jitr.experiment.run_config import check_train_config
from jitr.papers.run_configs import command_config
from tests.apps.test_faults import _defined_flags
from tests.apps.test_import_official import REPO
from tests.data.karpathy_folder import write_karpathy_folder

PAGE = REPO / "docs" / "training.md"
APPS = {"jitr-train": "train", "jitr-eval": "evaluate", "jitr-check-data": "check_data"}


def commands(kind: str) -> list[list[str]]:
  """Every command of the page's ``kind`` blocks (bash, text), split as the shell would
  (comments cut)."""
  out = []
  for block in re.findall(rf"```{kind}\n(.*?)```", PAGE.read_text(encoding="utf-8"), re.S):
    for line in block.replace("\\\n", " ").splitlines():
      words = shlex.split(line, comments=True)
      if words:
        out.append(words)
  return out


def user_folder(root: Path) -> Path:
  """A folder holding the user's files the text blocks name, as the page says they come:
  Flickr30K's split file and images (a generated Karpathy folder), open_clip weights, and
  the repository's configs."""
  json_path, images = write_karpathy_folder(str(root / "flickr30k"))
  os.rename(json_path, root / "flickr30k" / "dataset_flickr30k.json")
  os.rename(images, root / "flickr30k" / "flickr30k-images")
  (root / "b16-laion").mkdir()
  (root / "b16-laion" / "open_clip_pytorch_model.bin").write_bytes(b"")
  (root / "configs").symlink_to(REPO / "configs")
  return root


def built_configs(argvs: list[list[str]]) -> list[str]:
  """The config specs of ``argvs``' jitr-train commands, each built and checked as
  jitr-train does; the other commands' flags must exist."""
  built = []
  for argv in argvs:
    assert argv[0] in APPS, argv
    flags = {a[2:].split("=", 1)[0] for a in argv[1:] if a.startswith("--")}
    if argv[0] != "jitr-train":
      assert flags <= set(_defined_flags(APPS[argv[0]])), argv
      continue
    config = command_config(argv)
    check_train_config(config)  # raises on a field jitr-train would refuse
    built.append(argv[1].split("=", 1)[1])
  return built


def test_every_command_of_the_page_takes_its_flags_and_builds_its_config(monkeypatch, tmp_path):
  monkeypatch.chdir(REPO)  # the commands run from the repository's root
  built = built_configs(commands("bash"))
  assert "configs/shapes.py:triplet,vseinf_minilm" in built
  assert len(built) >= 15, built
  monkeypatch.chdir(user_folder(tmp_path))  # the user's own files, where the page has them
  on_user_files = built_configs(commands("text"))
  assert on_user_files == ["configs/clip.py:infonce", "configs/clip.py:infonce+triplet+sndcg"]
