"""Files of image-caption scores computed elsewhere (e.g. SPICE): their rows, as written.

Two forms, told apart by the file's extension:

* **table** (``.csv``, comma-separated; ``.tsv``, tab-separated): a header row naming the
  columns ``image``, ``caption`` and ``score`` (in any order; other columns are ignored),
  then one row per scored pair, e.g. ``3,17,0.21``. Blank lines are skipped.
* **json** (``.json``): one object ``{image: {caption: score}}``; a score is a number or
  the dict that pycocoevalcap's ``Spice().compute_score`` returns for one candidate
  (``{"All": {"f": F, "pr": P, "re": R, ...}, "Object": {...}, ...}``), whose
  ``["All"]["f"]`` (the SPICE F-score) is the score.

:func:`read_score_rows` returns the rows as they are written (keys as strings, each with
where it stands in the file); what they mean for a split (which image, which caption, the
range of a score) is :mod:`jitr.relevance.pair_scores`'s job. Every problem raises one
:class:`ScoresFileError` line naming the file and the line (or JSON keys) and what was
expected.
"""

from __future__ import annotations

import csv
import io
import json
import os
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from jitr import paths

COLUMNS = ("image", "caption", "score")
SPICE_SCORE = ("All", "f")  # the key path of the F-score in SPICE's per-candidate dict


class ScoresFileError(ValueError):
  """A scores file that cannot be read as one of the documented forms."""


class ScoreRow(NamedTuple):
  """One scored pair as the file writes it.

  Attributes:
    where: where the row stands (``FILE:LINE`` or ``FILE: image 'I', caption 'J'``).
    image: the image's key (an index or id, as written).
    caption: the caption's key (an index, as written).
    score: the score (any float: its range is checked against the split).
  """

  where: str
  image: str
  caption: str
  score: float


class JsonObject(list):
  """A JSON object as its ``(key, value)`` pairs in file order (repeated keys kept)."""


def _number(text: str, where: str) -> float:
  """``text`` as a float, else :class:`ScoresFileError` naming ``where``."""
  try:
    return float(text)
  except ValueError:
    raise ScoresFileError(f"{where}: score {text!r} is not a number") from None


def _read_text(path: str) -> str:
  if not paths.isfile(path):
    raise ScoresFileError(f"{path}: no such scores file")
  with paths.open(path, "rb") as f:
    data = f.read()
  try:
    return data.decode("utf-8-sig")
  except UnicodeDecodeError as err:
    raise ScoresFileError(f"{path}: not UTF-8 (byte offset {err.start}); expected text") from None


def read_table(path: str, delimiter: str) -> list[ScoreRow]:
  """The rows of a ``.csv`` / ``.tsv`` file with the header ``image, caption, score``."""
  lines = list(csv.reader(io.StringIO(_read_text(path)), delimiter=delimiter))
  numbered = [(n + 1, row) for n, row in enumerate(lines) if any(f.strip() for f in row)]
  if not numbered:
    raise ScoresFileError(f"{path}: empty; expected a header row naming {', '.join(COLUMNS)}")
  line, header = numbered[0]
  names = [field.strip() for field in header]
  missing = [c for c in COLUMNS if c not in names]
  if missing:
    sep = "tab" if delimiter == "\t" else "comma"
    raise ScoresFileError(
      f"{path}:{line}: missing column {', '.join(missing)}; expected a header row naming "
      f"the columns {', '.join(COLUMNS)} ({sep}-separated), got {header!r}"
    )
  where_is = {c: names.index(c) for c in COLUMNS}
  rows = []
  for line, fields in numbered[1:]:
    where = f"{path}:{line}"
    if len(fields) != len(names):
      raise ScoresFileError(
        f"{where}: {len(fields)} fields, expected {len(names)} (the header's columns)"
      )
    image, caption, score = (fields[where_is[c]].strip() for c in COLUMNS)
    rows.append(ScoreRow(where, image, caption, _number(score, where)))
  return rows


def _plain(value: Any) -> Any:
  """``value`` with every :class:`JsonObject` a dict again (to show it as written)."""
  if isinstance(value, JsonObject):
    return {key: _plain(item) for key, item in value}
  return value


def _spice_f(value: Any, where: str) -> float:
  """The score of one JSON value: a number, or SPICE's per-candidate ``["All"]["f"]``."""
  found = value
  for key in SPICE_SCORE:
    if not isinstance(found, JsonObject):
      break
    found = dict(found).get(key)
  if isinstance(found, bool) or not isinstance(found, int | float):
    raise ScoresFileError(
      f"{where}: score {json.dumps(_plain(value))[:60]} is not a number; expected a number or "
      "SPICE's per-candidate dict with a number at ['All']['f']"
    )
  return float(found)


def read_json_scores(path: str) -> list[ScoreRow]:
  """The rows of a ``.json`` file ``{image: {caption: score}}``."""
  try:
    value = json.loads(_read_text(path), object_pairs_hook=JsonObject)
  except json.JSONDecodeError as err:
    raise ScoresFileError(
      f"{path}:{err.lineno}: not valid JSON ({err.msg}, column {err.colno})"
    ) from None
  expected = "expected an object {image: {caption: score}}"
  if not isinstance(value, JsonObject):
    raise ScoresFileError(f"{path}: the file holds {type(value).__name__}, {expected}")
  rows = []
  for image, captions in value:
    if not isinstance(captions, JsonObject):
      raise ScoresFileError(f"{path}: image {image!r} holds no object of captions; {expected}")
    for caption, score in captions:
      where = f"{path}: image {image!r}, caption {caption!r}"
      rows.append(ScoreRow(where, image, caption, _spice_f(score, where)))
  return rows


# a scores file's extension -> its reader
FORMATS: Mapping[str, Callable[[str], list[ScoreRow]]] = {
  ".csv": lambda path: read_table(path, ","),
  ".tsv": lambda path: read_table(path, "\t"),
  ".json": read_json_scores,
}


def scores_format(path: str) -> str:
  """The form of the scores file ``path`` from its extension: ``csv``, ``tsv`` or ``json``."""
  ext = os.path.splitext(path)[1].lower()
  if ext not in FORMATS:
    raise ScoresFileError(
      f"{path}: unknown scores file extension {ext or '(none)'!r}; expected one of "
      f"{', '.join(sorted(FORMATS))}"
    )
  return ext[1:]


def read_score_rows(path: str) -> list[ScoreRow]:
  """Every row of the scores file ``path`` (its form from :func:`scores_format`).

  >>> import os, tempfile
  >>> path = os.path.join(tempfile.mkdtemp(), "s.csv")
  >>> _ = open(path, "w").write("image,caption,score\\n0,3,0.25\\n")
  >>> [(r.image, r.caption, r.score) for r in read_score_rows(path)]
  [('0', '3', 0.25)]
  """
  fmt = scores_format(path)
  rows = FORMATS[f".{fmt}"](path)
  if not rows:
    raise ScoresFileError(f"{path}: no scores; expected one row per scored (image, caption) pair")
  return rows
