"""Every console script, run as installed (``PYTHONPATH`` kept), answers each fault of its
command line -- a bad flag, a missing required flag, a stray argument, a missing input --
with exactly one stderr line ``NAME: error: ...`` and exit status 1, writing nothing; and
``jitr-train --help`` lists the config fields of configs/default.py with their defaults.

The runs answer before the training stack loads (the relevance apps load their estimators'
registry to define their flags), four at a time.
"""

import concurrent.futures
import os
import re
import subprocess
import sys

import pytest

from configs import default
from jitr.apps import _flag_names, _inputs
from tests.apps.test_faults import _APPS, _defined_flags
from tests.apps.test_one_line_faults import _app

PAPER = "configs/paper.py:f30k,sgr,triplet"

# app -> (the required flag reported first when none is given, its fault cases:
# {case: (arguments, the expected line after "NAME: error: ", or its start ending in "...")})
FAULTS = {
  "jitr-train": (
    "config",
    {
      "stray": ("--config=nope.py", "--workdir=w", "stray"),
      "missing file": (
        ("--config=nope.py", "--workdir=w"),
        "--config=nope.py: could not load the config file: [Errno 2] No such file or "
        "directory: 'nope.py'; expected a config file, e.g. one of the shipped "
        "configs/clip.py:LOSS, configs/default.py, ...",
      ),
    },
  ),
  "jitr-eval": (
    "workdir",
    {
      "stray": ("--workdir=nope", "stray"),
      "missing file": (
        ("--workdir=nope",),
        "--workdir=nope: no such file or folder; expected a jitr-train workdir "
        "(config.json + checkpoints/): a folder or a gs:// URL",
      ),
      "bad value": (
        ("--workdir=nope", "--split=dev"),
        "--split=dev: value should be one of <val|test>",
      ),
    },
  ),
  "jitr-check-data": (
    "dataset",
    {
      "stray": ("--precomp_root=nope", "--dataset=f30k_precomp", "stray"),
      "missing file": (
        ("--precomp_root=nope", "--dataset=f30k_precomp"),
        "nope/f30k_precomp: no such folder; expected the f30k_precomp folder with "
        "{split}_ims.npy and {split}_caps.txt for train, dev, test",
      ),
    },
  ),
  "jitr-import": (
    "config",
    {
      "stray": (f"--config={PAPER}", "--checkpoint=a", "--vocab=b", "--workdir=w", "stray"),
      "missing file": (  # the checkpoint first, not config.precomp_root, which it needs too
        (f"--config={PAPER}", "--checkpoint=nope.pth", "--vocab=nope.json", "--workdir=w"),
        "--checkpoint=nope.pth: no such file or folder; expected the official checkpoint "
        "(model_best.pth.tar, a torch.save file)",
      ),
    },
  ),
  "jitr-tables": (
    "table",
    {
      "stray": ("--table=list", "stray"),
      "missing file": (
        ("--table=list", "--precomp_root=nope"),
        "--precomp_root=nope: no such file or folder; expected the folder holding "
        "f30k_precomp/, coco_precomp/ and iaprtc12_precomp/ (config.precomp_root of every run)",
      ),
    },
  ),
  "jitr-precompute": (
    "captions",
    {
      "stray": ("--captions=nope.txt", "--estimator=cider", "--out=rel", "stray"),
      "missing file": (
        ("--captions=nope.txt", "--estimator=cider", "--out=rel"),
        "--captions=nope.txt: no such file or folder; expected caption file: precomp "
        "*_caps.txt, Flickr8k.token.txt or a Karpathy .json",
      ),
    },
  ),
  "jitr-relevance-agreement": (
    "captions",
    {
      "stray": ("--captions=nope.txt", "--judgments=j.txt", "stray"),
      "missing file": (
        ("--captions=nope.txt", "--judgments=j.txt"),
        "--captions=nope.txt: no such file or folder; expected Flickr8k.token.txt (the "
        "captions the judgments refer to)",
      ),
    },
  ),
  "jitr-relevance-calibrate": (
    "captions",
    {
      "stray": ("--captions=nope.txt", "--judgments=j.txt", "stray"),
      "missing file": (
        ("--captions=nope.txt", "--judgments=j.txt"),
        "--captions=nope.txt: no such file or folder; expected Flickr8k.token.txt",
      ),
    },
  ),
  "jitr-relevance-quality": (
    "data_dir",
    {
      "stray": ("--data_dir=d", "stray"),
      "missing file": (  # before jitr_shapes is built into --data_dir
        ("--data_dir=d", "--estimators=oracle,hmean:vectors:lsa|teacher:nope"),
        "teacher:nope: no such workdir (/...",
      ),
    },
  ),
}


def _cases() -> list[tuple[str, str, tuple[str, ...], str]]:
  """``(app, case, arguments, expected)`` of every fault of every app: :data:`FAULTS`, and
  an unknown flag (with the app's flags listed) and no flag at all for each."""
  stray = "unexpected argument 'stray' (flags take the form --name=value)"
  out = []
  for app, (first_required, faults) in FAULTS.items():
    own = _defined_flags(_APPS[app])
    listed = ", ".join(f"--{name}" for name in sorted(own))
    out.append(
      (app, "unknown flag", ("--bogus=1",), f"unknown flag --bogus; expected one of {listed} ...")
    )
    out.append((app, "no flags", (), f"--{first_required} is required: {own[first_required]}..."))
    for case, value in faults.items():
      args, expected = (value, stray) if case == "stray" else value
      out.append((app, case, tuple(args), expected))
  return out


CASES = _cases()


@pytest.fixture(scope="module")
def answers(tmp_path_factory):
  """``{(app, case): (exit status, stderr, files left in its folder)}``, each case run in a
  new empty folder, four at a time."""

  def one(case, cwd):
    app, name, args, _ = case
    out = _app(app, *args, cwd=cwd)
    return (app, name), (out.returncode, out.stderr, sorted(os.listdir(cwd)))

  # the folders are made here: pytest's mktemp is not safe from several threads at once
  cwds = [tmp_path_factory.mktemp("cli") for _ in CASES]
  with concurrent.futures.ThreadPoolExecutor(4) as pool:
    return dict(pool.map(one, CASES, cwds))


def test_every_app_has_its_cases():
  assert sorted({app for app, *_ in CASES}) == sorted(_APPS)
  assert len(CASES) == 9 * 4 + 1


@pytest.mark.slow  # every app's command-line faults: a process each, four at a time
@pytest.mark.parametrize(
  ("app", "case", "args", "expected"), CASES, ids=[f"{c[0]}-{c[1]}" for c in CASES]
)
def test_a_fault_of_the_command_line_is_one_error_line(answers, app, case, args, expected):
  status, err, left = answers[app, case]
  assert status == 1, err[-3000:]
  assert err.endswith("\n") and err.count("\n") == 1, err[-3000:]
  line = err.rstrip("\n")
  if expected.endswith("..."):
    assert line.startswith(f"{app}: error: {expected[:-3].rstrip()}"), line
  else:
    assert line == f"{app}: error: {expected}"
  assert left == []


# ---------------------------------------------------------------- --help lists the config
@pytest.fixture(scope="module")
def train_help(tmp_path_factory):
  """``jitr-train --help`` run outside the checkout."""
  out = _app("jitr-train", "--help", cwd=tmp_path_factory.mktemp("help"))
  assert out.returncode == 0, out.stderr[-3000:]
  return out.stdout


def _without_meaning(line: str) -> str:
  """A config-tree line of the help without the meaning after its value's column."""
  return re.match(r"^(\s*\S.*?)(\s{3,}\S.*)?$", line).group(1)


def test_train_help_lists_every_config_field_with_its_default(train_help):
  lines = train_help.splitlines()
  start = next(i for i, line in enumerate(lines) if line.startswith("--config fields of "))
  assert lines[start].endswith("default.py (their defaults; --config.FIELD=VALUE overrides one):")
  config = default.get_config()
  tree = lines[start + 1 : lines.index("", start)]
  fields = [line for line in tree if line[2] != " "]  # the top-level ones
  top = [line.split(":", 1)[0].strip() for line in fields]
  assert top == sorted(config.keys())
  for name, value in config.items():
    shown = f"  {name}:" if hasattr(value, "items") else f"  {name}: {value!r}"
    assert any(line == shown or line.startswith(shown + "   ") for line in fields), name
  group = [_without_meaning(line) for line in tree].index("  model:")
  assert [_without_meaning(line) for line in tree[group + 1 : group + 3]] == [
    "    embed_dim: 256",
    "    image: 'regions'",
  ]
  assert tree[group + 1].endswith("width of the joint embedding space")  # its line's comment
  assert (
    "      k: 64                                LSEH's 400 needs a richer vocabulary than "
    "jitr_shapes' 135 words" in tree
  )  # estimators.lsa.k, with the comment at its line's end
  assert "  data_dir: ''" in train_help
  assert "TFDS data dir; default: <workdir>/../tfds (shared between runs)" in train_help


def test_train_help_lists_the_shipped_config_files_and_where_they_are(train_help):
  lines = train_help.splitlines()
  start = next(i for i, line in enumerate(lines) if line.startswith("config files shipped"))
  folder = lines[start].split(" in ", 1)[1].split(" (", 1)[0]
  assert os.path.isfile(os.path.join(folder, "default.py")), folder
  shipped = [line.split()[0] for line in lines[start + 1 :] if line.startswith("  ")]
  for form in ("default.py", "paper.py:DATA,MODEL,LOSS", "shapes.py:NAME[,MODEL]"):
    assert form in shipped, shipped
  assert lines[-1] == "Try --helpfull to get a list of all flags."


def test_train_help_with_a_config_lists_that_config_s_fields(tmp_path):
  out = _app("jitr-train", "--config=configs/shapes.py:triplet,sgr", "--help", cwd=tmp_path)
  assert out.returncode == 0, out.stderr[-3000:]
  lines = out.stdout.splitlines()
  start = next(i for i, line in enumerate(lines) if line.startswith("--config fields of "))
  assert lines[start].split()[3].endswith("/shapes.py:triplet,sgr"), lines[start]
  tree = lines[start + 1 : lines.index("", start)]
  values = [_without_meaning(line) for line in tree]
  assert "  max_caption_len: 32" in values and "    name: 'sgr'" in values
  assert values[values.index("  model:") + 1] == "    embed_dim: 64"
  # a field the file sets without a comment keeps configs/default.py's meaning
  assert tree[values.index("  max_caption_len: 32")].endswith(
    'tokens a caption is cut to (never with text.tokenizer "nltk")'
  )
  assert os.listdir(tmp_path) == []


# ---------------------------------------------------------------- units of the messages
def test_given_flag_names_reads_both_flag_forms_and_stops_at_the_end():
  argv = ["jitr-x", "--a=1", "-b", "v", "--c=", "--d.e=2", "stray", "--", "--f=1"]
  assert _flag_names.given_flag_names(argv) == {"a", "b", "d.e"}


@pytest.mark.parametrize(
  ("help_text", "expected"),
  [
    ("The official checkpoint (x).", "the official checkpoint (x)"),
    ("A jitr-train workdir: a folder.", "a jitr-train workdir: a folder"),
    ("Caption file: precomp", "caption file: precomp"),
    ("Flickr8k.token.txt.", "Flickr8k.token.txt"),
    ("SGRAF's JSON", "SGRAF's JSON"),
  ],
)
def test_what_an_input_is_expected_to_be_reads_on_from_its_flag_help(help_text, expected):
  assert _inputs.lower_first(help_text) == expected


def test_an_unknown_flag_suggests_the_closest_of_the_app_s_flags():
  assert _flag_names.unknown_flag_error("wokdir", ["workdir", "config"]) == (
    "unknown flag --wokdir (did you mean --workdir?); expected one of --config, --workdir "
    "(--helpfull also lists absl's flags)"
  )


_HELP_PROBE = """
import contextlib, importlib, io, sys
sys.argv = ["jitr-x", "--help"]
app = importlib.import_module("jitr.apps.{module}")
with contextlib.suppress(SystemExit), contextlib.redirect_stdout(io.StringIO()):
  app.run()
print(sorted(m for m in ("jax", "tensorflow") if m in sys.modules))
"""


@pytest.mark.parametrize("module", ["evaluate", "check_data", "tables"])
def test_help_of_an_app_whose_flags_need_no_jax_loads_neither_jax_nor_tensorflow(module):
  code = _HELP_PROBE.format(module=module)
  out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
  assert out.returncode == 0, out.stderr[-2000:]
  assert out.stdout.strip() == "[]"
