"""An official checkpoint beside a published row: a workdir jitr-import made
(``jitr-tables --imported=ROW=WORKDIR``), scored with the table's protocol on its own
line. It stands beside the row only when it is what the row's runs are, so its difference
to the printed numbers measures the same thing as jitr's:

- the same network: ``config.json``'s ``model`` (:func:`jitr.models.registry.network_name`)
  is the network of the row's run (a row of several runs, an ensemble, is none of them; a
  row without runs has no network to compare);
- the same dataset and test split (``config.dataset``, ``config.test_split``);
- the same test files as the table's runs read under their ``precomp_root``: the
  workdir's pins (``inputs.json``, :func:`jitr.experiment.pinned_inputs.read_pins`; without
  pins, the files its ``config.json`` names) against those files, by SHA-256 (the same
  path, or the same bytes elsewhere, pass). A table given no ``precomp_root`` scores no
  run (every run's config needs one), so there is nothing to compare.

What differs is refused in one line starting ``--imported=ITEM:``. Scoring the workdir
on the table's files instead is not done: its pins would refuse other files, and its
report (``WORKDIR/eval_test_official``) would no longer be of the data it was imported
with.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

from jitr.experiment.data_sources import data_source
from jitr.experiment.pinned_inputs import fingerprint, read_pins, run_inputs
from jitr.experiment.workdir import CONFIG_NAME, read_workdir_config
from jitr.models.registry import network_name
from jitr.papers.published import Row


def network(config: Mapping[str, Any]) -> str:
  """The network of a run's ``config`` (``config.model.name``, or the default one)."""
  return network_name(config["model"])


def imported_config(item: str, workdir: str) -> dict[str, Any]:
  """``workdir/config.json``; one line naming the file when it is missing, not JSON or
  holds no ``model`` object."""
  path = os.path.join(workdir, CONFIG_NAME)
  config = read_workdir_config(workdir)
  if config is None:
    raise ValueError(
      f"--imported={item}: {path}: no such file; expected the config jitr-import writes"
    )
  if not isinstance(config.get("model"), dict):
    raise ValueError(f"--imported={item}: {path}: config.model: expected an object")
  return config


def split_roles(config: Mapping[str, Any]) -> list[str]:
  """The pinned roles of the test split's files a run of ``config`` reads
  (``f30k_precomp/test_ims.npy``, ``..._caps.txt``;
  :meth:`jitr.experiment.data_sources.DataSource.split_roles`), none for a dataset whose
  splits pin no file."""
  return list(data_source(config["dataset"]).split_roles(config, "test"))


def _files(config: Mapping[str, Any], workdir: str) -> dict[str, str]:
  """``{role: absolute path}`` of the files the run of ``config`` reads
  (:func:`jitr.experiment.pinned_inputs.run_inputs`; a config without its fields: none)."""
  try:
    return run_inputs(config, workdir)
  except (KeyError, TypeError):  # not a config jitr wrote: jitr-eval refuses it in one line
    return {}


def test_file_difference(
  workdir: str, theirs: Mapping[str, Any], ours: Mapping[str, Any]
) -> str | None:
  """Why the test split files the workdir ``workdir`` (its config ``theirs``) is scored
  on are not those the table's runs (config ``ours``) read: the role, both paths and
  SHA-256s; ``None`` when they are the same file or the same bytes, or when either is not
  there to compare (``ours`` without ``precomp_root``; a missing file is jitr-eval's to
  name)."""
  if not ours["precomp_root"] or not split_roles(ours):
    return None
  table = _files(ours, workdir)
  pins = read_pins(workdir) or {}
  named = {} if all(r in pins for r in split_roles(ours)) else _files(theirs, workdir)
  for role in split_roles(ours):
    pin = pins.get(role)
    path = pin.path if pin is not None else named.get(role)
    if role not in table or path is None or path == table[role]:
      continue
    sha = pin.sha256 if pin is not None else fingerprint(path).sha256
    table_sha = fingerprint(table[role]).sha256
    if sha != table_sha:
      return (
        f"its {role} is {path} (SHA-256 {sha[:16]}…), the table's runs read {table[role]} "
        f"(SHA-256 {table_sha[:16]}…)"
      )
  return None


def check_imported(
  item: str, workdir: str, number: int, row: Row, configs: Sequence[Mapping[str, Any]]
) -> None:
  """Refuses, in one line starting ``--imported=ITEM:``, the workdir ``workdir`` beside
  row ``number`` (``row``, its runs' configs ``configs`` as the table builds them) when it
  is not what the row's runs are (module docstring)."""
  if not row.runs:
    raise ValueError(
      f"--imported={item}: row {number} ({row.label}) has no jitr run to compare it with "
      f"({row.notes}); expected a row jitr runs"
    )
  theirs = imported_config(item, workdir)
  expected = " + ".join(network(c) for c in configs)
  if network(theirs) != expected:
    raise ValueError(
      f"--imported={item}: {workdir} holds a {network(theirs)} network, row {number} "
      f"({row.label}) is {expected}; expected a workdir jitr-import made from an official "
      f"{expected} checkpoint"
    )
  ours = configs[0]
  tested = (theirs.get("dataset"), theirs.get("test_split"))
  if tested != (ours["dataset"], ours["test_split"]):
    raise ValueError(
      f"--imported={item}: {workdir} is tested on {tested[0]} split {tested[1]}, row "
      f"{number}'s runs on {ours['dataset']} split {ours['test_split']}; expected a workdir "
      "imported with the row's dataset and test_split"
    )
  difference = test_file_difference(workdir, theirs, ours)
  if difference is not None:
    raise ValueError(
      f"--imported={item}: {workdir} was imported on other test data than the table's: "
      f"{difference}; import it with --config.precomp_root={ours['precomp_root']}"
    )
