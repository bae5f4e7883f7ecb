"""A run config's defaults live in configs/default.py alone: no module of jitr reads a run
config's field with a second default, every field the code reads is set there, and a
config without one is refused in one line naming it."""

import ast
import json
import pathlib

import ml_collections
import pytest

from configs import default, pod_check
from jitr.experiment.run_config import (
  ADAMW_FIELDS,
  REQUIRED_FIELDS,
  REQUIRED_GROUP_FIELDS,
  check_train_config,
)

JITR = pathlib.Path(__file__).resolve().parents[2] / "jitr"
# ConfigDict's own methods, not fields
METHODS = {"copy_and_resolve_references", "get", "to_dict", "to_json_best_effort", "unlocked"}
# names a run config (or one of its groups) goes by in jitr's code
CONFIG_NAMES = ("config", "saved_config", "settings", "teacher", "saved")
# Groups whose defaults are documented where their settings are defined, not in
# configs/default.py: ``model`` (the network's settings and their defaults,
# jitr.models.model_settings) and ``estimators`` (each estimator's,
# jitr.relevance.registry.default_estimator_settings, which configs/default.py copies).
GROUP_DEFAULTS = {
  "jitr/experiment/official_import.py": "config.model.get('concept_threshold', THRESHOLD)",
  "jitr/relevance/registry.py": "settings.get(name) or {}",
}


def _modules():
  for path in sorted(JITR.rglob("*.py")):
    if "configs" not in path.relative_to(JITR).parts:  # the configs/ link of a checkout
      yield path.relative_to(JITR.parent), ast.parse(path.read_text(encoding="utf-8"))


def _names_a_config(node: ast.expr) -> bool:
  """Whether ``node`` is ``config``, ``config.GROUP``, ``saved_config``, ``settings`` ..."""
  while isinstance(node, ast.Attribute):
    node = node.value
  return isinstance(node, ast.Name) and node.id in CONFIG_NAMES


def _is_config_get(node: ast.AST) -> bool:
  return (
    isinstance(node, ast.Call)
    and isinstance(node.func, ast.Attribute)
    and node.func.attr == "get"
    and _names_a_config(node.func.value)
  )


def test_no_module_reads_a_config_field_with_a_second_default():
  found = []
  for path, tree in _modules():
    for node in ast.walk(tree):
      if _is_config_get(node) and len(node.args) + len(node.keywords) > 1:
        found.append(f"{path}:{node.lineno} {ast.unparse(node)}")  # config.get(x, default)
      if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.Or):
        if _is_config_get(node.values[0]):  # config.get(x) or default
          found.append(f"{path}:{node.lineno} {ast.unparse(node)}")
      if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "getattr"
        and len(node.args) == 3
        and _names_a_config(node.args[0])
      ):
        found.append(f"{path}:{node.lineno} {ast.unparse(node)}")
  assert [f for f in found if GROUP_DEFAULTS.get(f.split(":")[0]) != f.split(" ", 1)[1]] == []


def _fields_read(folder: str) -> set[str]:
  """``config.FIELD`` and ``config.GROUP.FIELD`` read in ``jitr/FOLDER``."""
  out = set()
  for path, tree in _modules():
    if path.parts[1] != folder:
      continue
    for node in ast.walk(tree):
      if isinstance(node, ast.Attribute) and node.attr not in METHODS:
        if isinstance(node.value, ast.Name) and node.value.id == "config":
          out.add(node.attr)
        elif (
          isinstance(node.value, ast.Attribute)
          and isinstance(node.value.value, ast.Name)
          and node.value.value.id == "config"
          and node.value.attr in REQUIRED_GROUP_FIELDS
        ):
          out.add(f"{node.value.attr}.{node.attr}")
  return out


def _optimizer_keys() -> set[str]:
  """``config["KEY"]`` read by jitr/training/optimizer.py (it gets the optimizer group)."""
  tree = ast.parse((JITR / "training" / "optimizer.py").read_text(encoding="utf-8"))
  return {
    node.slice.value
    for node in ast.walk(tree)
    if isinstance(node, ast.Subscript)
    and isinstance(node.value, ast.Name)
    and node.value.id == "config"
    and isinstance(node.slice, ast.Constant)
  }


def _has(config: ml_collections.ConfigDict, dotted: str) -> bool:
  node = config
  for part in dotted.split("."):
    if part not in node:
      return False
    node = node[part]
  return True


def test_configs_default_sets_every_field_the_run_reads():
  config = default.get_config()
  read = _fields_read("experiment") | {f"optimizer.{k}" for k in _optimizer_keys()}
  assert "prefetch" in read and "optimizer.grad_clip" in read  # the scan sees the reads
  assert sorted(f for f in read if not _has(config, f)) == []
  # and check_train_config requires each, so a config without one is refused up front
  required = set(REQUIRED_FIELDS) | {
    f"{group}.{name}" for group, names in REQUIRED_GROUP_FIELDS.items() for name in names
  }
  required |= {f"optimizer.{name}" for name in ADAMW_FIELDS}
  assert sorted(read - required) == []
  assert all(_has(config, f) for f in required)


def test_pod_check_passes_the_checks():
  check_train_config(pod_check.get_config())


@pytest.mark.parametrize(
  "dotted", ["prefetch", "token_buckets", "optimizer.grad_clip", "concepts.source"]
)
def test_a_config_without_a_field_the_run_reads_is_one_line(dotted):
  raw = default.get_config().to_dict()
  *groups, field = dotted.split(".")
  node = raw
  for group in groups:
    node = node[group]
  del node[field]
  with pytest.raises(ValueError) as err:
    check_train_config(ml_collections.ConfigDict(raw))
  assert str(err.value).startswith(f"config.{dotted}: missing")
  assert "\n" not in str(err.value)


def test_adamw_needs_its_weight_decay():
  raw = default.get_config().to_dict()
  raw["optimizer"]["name"] = "adamw"
  check_train_config(ml_collections.ConfigDict(raw))  # configs/default.py sets it
  del raw["optimizer"]["weight_decay"]
  with pytest.raises(ValueError) as err:
    check_train_config(ml_collections.ConfigDict(raw))
  assert str(err.value) == "config.optimizer.weight_decay: missing (see configs/default.py)"


@pytest.mark.parametrize(
  ("value", "expected"),
  [
    (0.0, "config.train_fraction: expected a finite number > 0, got 0.0"),
    (1.5, "config.train_fraction: expected a share of the training images in (0, 1], got 1.5"),
    ("half", "config.train_fraction: expected a finite number > 0, got 'half' (str)"),
  ],
)
def test_a_train_fraction_outside_zero_to_one_is_one_line(value, expected):
  raw = default.get_config().to_dict()
  raw["train_fraction"] = value
  with pytest.raises(ValueError) as err:
    check_train_config(ml_collections.ConfigDict(raw))
  assert str(err.value) == expected


def test_a_config_json_without_train_fraction_resumes_as_every_image(tmp_path):
  from jitr.experiment.workdir import check_workdir

  new = default.get_config()
  saved = {k: v for k, v in new.to_dict().items() if k != "train_fraction"}
  (tmp_path / "config.json").write_text(json.dumps(saved))
  check_workdir(new, str(tmp_path))  # the same run
  new.train_fraction = 0.5
  with pytest.raises(ValueError, match=r"train_fraction=1\.0 \(this config: 0\.5\)"):
    check_workdir(new, str(tmp_path))
