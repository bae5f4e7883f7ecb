"""The flags each jitr app's ``--help`` lists, as JSON: ``python app_flags.py MODULE...``.

Used by the ``jitr-cli`` directive (``jitr_cli.py``) in a separate interpreter: several apps
define flags of the same name, so each app's flags are removed before the next is imported.
"""

from __future__ import annotations

import importlib
import json
import pathlib
import sys
import tomllib

from absl import flags

ROOT = pathlib.Path(__file__).resolve().parents[2]


def console_scripts(pyproject: pathlib.Path = ROOT / "pyproject.toml") -> dict[str, str]:
  """``{script: module}`` of ``[project.scripts]``, in file order."""
  scripts = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]["scripts"]
  return {name: target.split(":")[0] for name, target in scripts.items()}


def describe(module_names: list[str]) -> list[dict]:
  """Each module's docstring and the flags its ``--help`` lists (``jitr.apps._cli.App.own_flags``
  makes the same list): imports the modules one by one, removing each one's flags after."""
  fv = flags.FLAGS
  absl_own = set(fv)
  out = []
  for module_name in module_names:
    module = importlib.import_module(module_name)
    names = [flag.name for flag in fv.get_key_flags_for_module(module_name)]
    names += [v.name for v in vars(module).values() if isinstance(v, flags.FlagHolder)]
    described = []
    for name in dict.fromkeys(names):
      flag = fv[name]
      entry = {
        "name": flag.name,
        "help": flag.help or "",
        "type": flag.flag_type(),
        "boolean": bool(flag.boolean),
        "default": None if flag.default is None else _unquoted(flag.default_as_str),
        "config": None,
      }
      parser = type(flag.parser).__name__
      if parser == "ConfigFileFlagParser":
        entry.update(config="file", default=None)
      elif name == "config" and flag.default is not None and hasattr(flag.default, "to_dict"):
        entry.update(config="dict", default=str(flag.default).rstrip())
      described.append(entry)
    out.append({"module": module_name, "doc": module.__doc__ or "", "flags": described})
    for name in set(fv) - absl_own:
      delattr(fv, name)
  return out


def _unquoted(text: str) -> str:
  """absl's ``default_as_str`` (``"'test'"``) without its quotes."""
  if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
    return text[1:-1]
  return text


if __name__ == "__main__":
  sys.path.insert(0, str(ROOT))  # the jitr of this source tree, installed or not
  json.dump(describe(sys.argv[1:]), sys.stdout)
