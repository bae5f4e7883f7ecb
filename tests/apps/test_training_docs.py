"""docs/training.md's commands: every jitr-train command's config builds as jitr-train
builds it (its config file, spec and ``--config.FIELD=VALUE`` overrides) and passes
jitr-train's checks; every jitr-eval and jitr-check-data flag exists."""

import re
import shlex

from jitr.experiment.run_config import check_train_config
from jitr.papers.run_configs import command_config
from tests.apps.test_faults import _defined_flags
from tests.apps.test_import_official import REPO

PAGE = REPO / "docs" / "training.md"
APPS = {"jitr-train": "train", "jitr-eval": "evaluate", "jitr-check-data": "check_data"}


def commands() -> list[list[str]]:
  """Every command of the page's bash blocks, split as the shell would (comments cut)."""
  out = []
  for block in re.findall(r"```bash\n(.*?)```", PAGE.read_text(encoding="utf-8"), re.S):
    for line in block.replace("\\\n", " ").splitlines():
      words = shlex.split(line, comments=True)
      if words:
        out.append(words)
  return out


def test_every_command_of_the_page_takes_its_flags_and_builds_its_config(monkeypatch):
  monkeypatch.chdir(REPO)  # the commands run from the repository's root
  names = [argv[0] for argv in commands()]
  assert set(names) <= set(APPS), names
  built = []
  for argv in commands():
    flags = {a[2:].split("=", 1)[0] for a in argv[1:] if a.startswith("--")}
    if argv[0] != "jitr-train":
      assert flags <= set(_defined_flags(APPS[argv[0]])), argv
      continue
    config = command_config(argv)
    check_train_config(config)  # raises on a field jitr-train would refuse
    built.append(argv[1].split("=", 1)[1])
  assert "configs/shapes.py:triplet,vseinf_minilm" in built
  assert len(built) >= 15, built
