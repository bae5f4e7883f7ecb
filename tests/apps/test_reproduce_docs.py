"""docs/reproduce.md's commands. Always: jitr-tables' list, jobs, slurm and report commands
run as written on a generated folder (the plan's estimate and a run train: the end-to-end
test runs those forms), every jitr-train command's config builds and passes jitr-train's
checks, every jitr-eval flag exists. On request (``-m full``): every seed experiment's
jitr-train and jitr-eval command runs as written on generated folders of the real shapes,
with tiny settings appended."""

import json
import re
import shlex
import shutil

import pytest

from jitr.papers import registry
from jitr.papers import run_configs as table_run_configs
from jitr.papers.plan import SeededRun
from jitr.papers.published import Run
from tests.apps.test_faults import _defined_flags
from tests.apps.test_import_official import REPO, console
from tests.apps.test_tables_command import tables
from tests.bert_folder import write_bert_folder
from tests.file_fixtures import WORDS, write_precomp
from tests.labelled_folders import WIKI, write_labelled

PAGE = REPO / "docs" / "reproduce.md"


def commands() -> list[list[str]]:
  """Every command of the page's bash blocks, each split as the shell would (without a
  ``> FILE`` redirection, given back as the last item ``>FILE``)."""
  out = []
  for block in re.findall(r"```bash\n(.*?)```", PAGE.read_text(encoding="utf-8"), re.S):
    for line in block.replace("\\\n", " ").splitlines():
      if line.strip():
        words = shlex.split(line)
        if ">" in words:
          at = words.index(">")
          words = [*words[:at], f">{words[at + 1]}"]
        out.append(words)
  return out


def _flags(argv: list[str]) -> dict[str, str]:
  return dict(a[2:].split("=", 1) for a in argv[1:] if a.startswith("--") and "=" in a)


@pytest.fixture
def folders(tmp_path):
  write_precomp(tmp_path / "data" / "precomp", n_images=40)
  return tmp_path


def test_the_page_has_the_commands_of_each_action_and_paper():
  names = [c[0] for c in commands()]
  assert names.count("jitr-tables") == 11
  assert {c[-1] for c in commands() if c[0] == "jitr-tables"} >= {">jobs.sh", ">cvse.sbatch"}
  for heading in ("## Listwise ITR", "## CMAL²R", "## SAM", "## LSEH"):
    assert heading in PAGE.read_text(encoding="utf-8"), heading
  for name in registry.TABLES:
    assert f"`{name}`" in PAGE.read_text(encoding="utf-8"), name


def test_the_table_commands_run_as_written(folders):
  ran = 0
  for argv in commands():
    if argv[0] != "jitr-tables":
      continue
    action = _flags(argv).get("action", "plan")
    if action in ("plan", "run") and argv[1] != "--table=list":  # measure, train: see above
      continue
    out_file = argv[-1][1:] if argv[-1].startswith(">") else None
    done = tables(*(argv[1:-1] if out_file else argv[1:]), cwd=folders)
    assert done.returncode == 0, (argv, done.stderr[-3000:])
    ran += 1
    if argv[1] == "--table=list":
      assert done.stdout.splitlines()[0].startswith("vseinf.readme.f30k: ")
      assert len([line for line in done.stdout.splitlines() if ": " in line]) == sum(
        1 + len(t.rows) for t in registry.TABLES.values()
      )
    elif action == "jobs":
      lines = done.stdout.splitlines()
      assert lines[0] == "set -e" and len(lines) == 1 + 3 + 1  # three seeds, the report
      assert all("--config.precomp_root=" in line for line in lines[1:4])
    elif action == "slurm":
      assert "#SBATCH --array=0-2" in done.stdout
    elif action == "report":
      table = json.loads(
        (folders / "runs" / "papers" / "tables" / "cvse.readme.f30k.json").read_text()
      )
      assert table["rows"][0]["scored_seeds"] == 0
      assert "| | jitr | no seed yet |" in done.stdout
  assert ran == 4


def test_each_training_command_builds_a_config_jitr_train_takes(folders):
  """The config of every jitr-train command (its config file's spec and overrides) as
  jitr-train builds it, checked as jitr-train checks it; jitr-eval's flags exist."""
  eval_flags = set(_defined_flags("evaluate"))
  trained = 0
  for argv in commands():
    flags = _flags(argv)
    if argv[0] == "jitr-eval":
      assert set(flags) <= eval_flags, argv
    if argv[0] != "jitr-train":
      continue
    spec = flags.pop("config").split(":", 1)[1]
    sets = [f"{k[len('config.') :]}={v}" for k, v in flags.items() if k.startswith("config.")]
    seeded = SeededRun(Run("docs", spec), 0, str(folders / flags["workdir"]))
    config = table_run_configs.parsed_config(seeded, sets)
    if spec.startswith("wiki"):
      assert config.labelled.folder == "data/wiki"
    else:
      assert config.precomp_root == "data/precomp"
    trained += 1
  assert trained == 6


# the test's one change to each documented run: tiny networks, one or two short epochs
TINY = {
  "common": (
    "--config.batch_size=16",
    "--config.eval_batch_size=16",
    "--config.vocab_min_count=1",
    "--config.compilation_cache=False",
  ),
  "vsepp": ("--config.num_epochs=2", "--config.model.embed_dim=16", "--config.model.word_dim=8"),
  "sgr": ("--config.num_epochs=1", "--config.model.embed_dim=16", "--config.model.sim_dim=8"),
  "saf": ("--config.num_epochs=1", "--config.model.embed_dim=16", "--config.model.sim_dim=8"),
  "vsrn": ("--config.num_epochs=1", "--config.model.embed_dim=16", "--config.model.word_dim=8"),
  "twobranch": (
    "--config.num_epochs=1",
    "--config.model.image_hidden=(16,)",
    "--config.model.text_hidden=(16,)",
    "--config.model.embed_dim=8",
  ),
}


# and to a loss's relevance: the 10 words of the generated captions hold fewer than 400
# SVD components
LOSS_TINY = {"lseh": ("--config.estimators.lsa.k=4",)}


@pytest.mark.slow
@pytest.mark.full  # six trainings and three evaluations of the papers' networks
def test_the_seed_experiments_run_as_written(folders):
  # 12 test images: SAM's NCS@10 and Semantic Recall@10 need 10 candidates and the positive
  shutil.rmtree(folders / "data" / "precomp" / "f30k_precomp")
  write_precomp(folders / "data" / "precomp", n_images=40, n_eval=12)
  write_precomp(
    folders / "data" / "precomp", n_images=40, dataset="iaprtc12_precomp", captions_per_image=1
  )
  write_labelled(folders / "data" / "wiki", WIKI, {"train": 300, "test": 60}, noise=3.0)
  write_bert_folder(folders / "bert", WORDS)
  for argv in commands():
    if argv[0] not in ("jitr-train", "jitr-eval"):
      continue
    extra = ()
    if argv[0] == "jitr-train":
      _, model, loss = _flags(argv)["config"].split(":")[1].split(",")
      extra = (*TINY["common"], *TINY[model], *LOSS_TINY.get(loss, ()))
      if model == "twobranch":
        extra = TINY[model]
    done = console(*argv, *extra, cwd=folders)
    assert done.returncode == 0, (argv, done.stderr[-3000:])
  sam = json.loads((folders / "runs" / "f30k_vsrn_sam" / "eval_test" / "metrics.json").read_text())
  assert "semantic/i2t/NCS@1" in sam or any(k.startswith("semantic/") for k in sam)
  ensemble = folders / "runs" / "f30k_sgr_sndcg" / "eval_test_ensemble_official" / "metrics.json"
  assert json.loads(ensemble.read_text())["full/rsum"] > 0
