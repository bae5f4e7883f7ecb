"""jitr-tables' ``--action=report``: every row's finished seeds scored with the table's
protocol, the imported official checkpoints beside their rows (checked to be what their
row's runs are), the comparison's files written and its Markdown printed."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Sequence

from jitr.papers import imported
from jitr.papers.comparison import compare
from jitr.papers.plan import SeededRun, Status, status, workdir
from jitr.papers.published import Table
from jitr.papers.row_scores import score_row
from jitr.papers.run_configs import applicable_sets, parsed_config
from jitr.papers.table_files import markdown, write_table_files
from jitr.papers.table_options import Options, imported_items, imported_rows, row_numbers, say


def row_scores(table: Table, options: Options) -> list[list[dict]]:
  """For each row, the report metrics of its seeds whose runs all finished."""
  scores = []
  for row in table.rows:
    seeded = []
    for seed in range(options.seeds):
      members = [workdir(options.root, r, seed) for r in row.runs]
      finished = [status(SeededRun(r, seed, w)) for r, w in zip(row.runs, members)]
      if members and all(s == Status.FINISHED for s in finished):
        with contextlib.redirect_stdout(sys.stderr):
          seeded.append(score_row(table, members, say=say))
    scores.append(seeded)
  return scores


def check_imported(table: Table, options: Options, sets: Sequence[str]) -> None:
  """Refuses an ``options.imported`` workdir that is not what its row's runs are: another
  network, dataset or test split, or other test files than the table's runs read
  (:func:`jitr.papers.imported.check_imported`), in one line."""
  numbers = row_numbers(table, options)
  for item, number, folder in imported_items(table, options):
    row = table.rows[numbers.index(number)]
    seeded = [SeededRun(r, 0, workdir(options.root, r, 0)) for r in row.runs]
    configs = [parsed_config(s, applicable_sets(s, sets)) for s in seeded]
    imported.check_imported(item, folder, number, row, configs)


def report(table: Table, options: Options) -> dict[str, str]:
  """Scores every row's finished seeds (and the imported official checkpoints), writes
  the table files, prints the Markdown; returns the files' paths."""
  imported = {}
  for index, folder in imported_rows(table, options).items():
    with contextlib.redirect_stdout(sys.stderr):
      imported[index] = score_row(table, [folder], trained="import.json", say=say)
  comparison = compare(table, row_scores(table, options), imported)
  files = write_table_files(comparison, options.out_folder)
  sys.stdout.write(markdown(comparison))
  say(f"wrote {files['md']}, {files['json']}, {files['png']}")
  return files
