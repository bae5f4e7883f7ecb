"""The caption grammar of ``jitr_shapes`` and the facts each caption states.

Every caption is generated together with its :class:`CaptionFacts`: the object
mentions with exactly the attributes the text states (shape, colour, size, row,
col; ``-1`` = not stated), an optional total object count and an optional
spatial relation between two mentions. The text varies like human captions do:
synonyms (``ball``/``disc``/``circle``, ``crimson``/``red``, ``big``/``large``),
word order (``a red circle at the top`` / ``at the top there is a red circle``),
partial descriptions (one object or all, some attributes only), counts and
relations. Relevance (see :mod:`jitr.data.shapes.relevance`) is computed from the facts, never
from the words, so caption similarity is only an imperfect proxy for it.

All facts of a generated caption are true of its scene, so an image's own
captions have relevance exactly 1. numpy only.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence

import numpy as np

from jitr.data.shapes import scene as shapes_scene

CAPTIONS_PER_IMAGE = 5
MAX_MENTIONS = 3
RELATIONS: tuple[str, ...] = ("left_of", "right_of", "above", "below")
LEFT_OF, RIGHT_OF, ABOVE, BELOW = range(4)
# Packed facts: MAX_MENTIONS x 5 attributes, n_mentions, count, (subj, rel, obj).
FACT_FIELDS = MAX_MENTIONS * shapes_scene.NUM_ATTRIBUTES + 1 + 1 + 3

SHAPE_WORDS: tuple[tuple[str, ...], ...] = (
  ("circle", "disc", "ball", "round shape"),
  ("square", "box", "block", "square shape"),
  ("triangle", "triangular shape", "pyramid"),
  ("diamond", "rhombus", "lozenge", "diamond shape"),
  ("cross", "plus sign", "plus shape"),
)
COLOUR_WORDS: tuple[tuple[str, ...], ...] = (
  ("red", "crimson", "scarlet"),
  ("green", "emerald"),
  ("blue", "cobalt"),
  ("yellow", "golden"),
  ("purple", "violet"),
  ("orange", "amber"),
  ("cyan", "turquoise", "aqua"),
  ("white", "ivory"),
)
SIZE_WORDS: tuple[tuple[str, ...], ...] = (
  ("small", "little", "tiny"),
  ("large", "big", "huge"),
)
GENERIC_NOUNS: tuple[str, ...] = ("shape", "object", "thing", "figure", "item")
COUNT_WORDS: dict[int, tuple[str, ...]] = {
  1: ("one", "a single"),
  2: ("two", "a pair of"),
  3: ("three",),
}
OPENERS: tuple[str, ...] = (
  "",
  "",
  "",
  "there is ",
  "a picture of ",
  "an image showing ",
  "we can see ",
  "this image contains ",
  "a dark background with ",
)
# Position phrases: (row, col) -> phrases; row-only; col-only.
_CORNER = {(0, 0): "top left", (0, 2): "top right", (2, 0): "bottom left", (2, 2): "bottom right"}
ROW_PHRASES: tuple[tuple[str, ...], ...] = (
  ("at the top", "near the top", "in the upper part"),
  ("in the middle row", "halfway down"),
  ("at the bottom", "near the bottom", "in the lower part"),
)
COL_PHRASES: tuple[tuple[str, ...], ...] = (
  ("on the left", "on the left side", "at the left"),
  ("in the center column", "in the middle column"),
  ("on the right", "on the right side", "at the right"),
)
RELATION_PHRASES: tuple[tuple[str, ...], ...] = (
  ("to the left of", "left of", "on the left of"),
  ("to the right of", "right of", "on the right of"),
  ("above", "over", "higher than"),
  ("below", "under", "beneath", "lower than"),
)


@dataclasses.dataclass(frozen=True)
class Mention:
  """An object mention: attribute indices, ``-1`` where the caption is silent."""

  shape: int = -1
  colour: int = -1
  size: int = -1
  row: int = -1
  col: int = -1

  def attributes(self) -> tuple[int, int, int, int, int]:
    return (self.shape, self.colour, self.size, self.row, self.col)

  def num_stated(self) -> int:
    return sum(a >= 0 for a in self.attributes())


@dataclasses.dataclass(frozen=True)
class CaptionFacts:
  """What one caption states: mentions, total count (-1: none) and relation.

  ``relation`` is ``(subject_mention, relation_index, object_mention)`` into
  ``mentions`` and ``RELATIONS`` (e.g. ``(0, ABOVE, 1)``: mention 0 is above
  mention 1), or ``None``.
  """

  mentions: tuple[Mention, ...] = ()
  count: int = -1
  relation: tuple[int, int, int] | None = None

  def __post_init__(self):
    if len(self.mentions) > MAX_MENTIONS:
      raise ValueError(f"CaptionFacts: at most {MAX_MENTIONS} mentions, got {len(self.mentions)}")
    if self.relation is not None:
      a, rel, b = self.relation
      if not (
        0 <= a < len(self.mentions)
        and 0 <= b < len(self.mentions)
        and a != b
        and 0 <= rel < len(RELATIONS)
      ):
        raise ValueError(
          f"CaptionFacts: bad relation {self.relation} for {len(self.mentions)} mentions"
        )
    if not self.mentions and self.count < 0:
      raise ValueError("CaptionFacts: a caption must state a mention or a count")

  def to_array(self) -> np.ndarray:
    """Packs into int32 ``[FACT_FIELDS]``: mention attributes (``-1`` padded),
    number of mentions, count, relation ``(subject, relation, object)`` or -1s."""
    out = np.full((FACT_FIELDS,), -1, dtype=np.int32)
    for i, m in enumerate(self.mentions):
      out[i * shapes_scene.NUM_ATTRIBUTES : (i + 1) * shapes_scene.NUM_ATTRIBUTES] = m.attributes()
    base = MAX_MENTIONS * shapes_scene.NUM_ATTRIBUTES
    out[base] = len(self.mentions)
    out[base + 1] = self.count
    if self.relation is not None:
      out[base + 2 : base + 5] = self.relation
    return out

  @classmethod
  def from_array(cls, array: np.ndarray) -> CaptionFacts:
    """Inverse of :meth:`to_array`."""
    array = np.asarray(array)
    if array.shape != (FACT_FIELDS,):
      raise ValueError(
        f"CaptionFacts.from_array: expected shape ({FACT_FIELDS},), got {array.shape}"
      )
    base = MAX_MENTIONS * shapes_scene.NUM_ATTRIBUTES
    n = int(array[base])
    mentions = tuple(
      Mention(
        *(
          int(v)
          for v in array[i * shapes_scene.NUM_ATTRIBUTES : (i + 1) * shapes_scene.NUM_ATTRIBUTES]
        )
      )
      for i in range(n)
    )
    rel = tuple(int(v) for v in array[base + 2 : base + 5])
    return cls(mentions=mentions, count=int(array[base + 1]), relation=None if rel[0] < 0 else rel)

  def to_json(self) -> str:
    """Human-readable JSON with attribute names, e.g.
    ``{"mentions": [{"shape": "circle", "colour": "red"}], "count": 2}``."""
    names = (
      shapes_scene.SHAPES,
      shapes_scene.COLOURS,
      shapes_scene.SIZES,
      shapes_scene.ROWS,
      shapes_scene.COLS,
    )
    keys = ("shape", "colour", "size", "row", "col")
    d: dict = {
      "mentions": [
        {k: n[v] for k, n, v in zip(keys, names, m.attributes()) if v >= 0} for m in self.mentions
      ]
    }
    if self.count >= 0:
      d["count"] = self.count
    if self.relation is not None:
      a, rel, b = self.relation
      d["relation"] = [a, RELATIONS[rel], b]
    return json.dumps(d, sort_keys=True)

  @classmethod
  def from_json(cls, text: str) -> CaptionFacts:
    """Inverse of :meth:`to_json`."""
    d = json.loads(text)
    names = (
      shapes_scene.SHAPES,
      shapes_scene.COLOURS,
      shapes_scene.SIZES,
      shapes_scene.ROWS,
      shapes_scene.COLS,
    )
    keys = ("shape", "colour", "size", "row", "col")
    mentions = tuple(
      Mention(*(n.index(m[k]) if k in m else -1 for k, n in zip(keys, names)))
      for m in d["mentions"]
    )
    rel = d.get("relation")
    return cls(
      mentions=mentions,
      count=int(d.get("count", -1)),
      relation=None if rel is None else (int(rel[0]), RELATIONS.index(rel[1]), int(rel[2])),
    )


# ----------------------------------------------------------------------------
# Phrase helpers.


def _pick(rng: np.random.Generator, options: Sequence[str]) -> str:
  return options[int(rng.integers(len(options)))]


def _article(word: str) -> str:
  return "an" if word[:1] in "aeiou" else "a"


def _plural(noun: str) -> str:
  head, _, last = noun.rpartition(" ")
  last = last + "es" if last.endswith(("s", "x")) else last + "s"
  return f"{head} {last}" if head else last


def _position_phrase(row: int, col: int, rng: np.random.Generator) -> str:
  """A phrase for the stated position; ``-1`` for an unstated coordinate."""
  if row >= 0 and col >= 0:
    if (row, col) == (1, 1):
      return _pick(rng, ("in the center", "in the middle", "at the centre"))
    if (row, col) in _CORNER:
      c = _CORNER[(row, col)]
      return _pick(rng, (f"in the {c} corner", f"at the {c}", f"in the {c.replace(' ', '-')}"))
    if row == 1:  # middle left / middle right
      side = shapes_scene.COLS[col]
      return _pick(
        rng,
        (
          f"in the middle of the {side} side",
          f"on the {side}, halfway down",
          f"at the middle {side}",
        ),
      )
    vert = shapes_scene.ROWS[row]  # top / bottom center
    return _pick(
      rng,
      (
        f"at the {vert} center",
        f"at the {vert} in the middle",
        f"in the middle of the {vert} edge",
      ),
    )
  if row >= 0:
    return _pick(rng, ROW_PHRASES[row])
  return _pick(rng, COL_PHRASES[col])


def _choose_stated(
  rng: np.random.Generator, *, p_shape: float, p_colour: float, p_size: float, p_position: float
) -> set[int]:
  """Random subset of attributes to state (never empty)."""
  stated = set()
  if rng.random() < p_shape:
    stated.add(shapes_scene.SHAPE)
  if rng.random() < p_colour:
    stated.add(shapes_scene.COLOUR)
  if rng.random() < p_size:
    stated.add(shapes_scene.SIZE)
  if rng.random() < p_position:
    u = rng.random()
    stated |= (
      {shapes_scene.ROW, shapes_scene.COL}
      if u < 0.5
      else ({shapes_scene.ROW} if u < 0.75 else {shapes_scene.COL})
    )
  if not stated:
    stated.add(shapes_scene.COLOUR if rng.random() < 0.5 else shapes_scene.SHAPE)
  return stated


def _mention(obj: shapes_scene.SceneObject, stated: set[int]) -> Mention:
  attrs = obj.attributes()
  return Mention(*(attrs[k] if k in stated else -1 for k in range(shapes_scene.NUM_ATTRIBUTES)))


def _noun_phrase(
  obj: shapes_scene.SceneObject,
  stated: set[int],
  rng: np.random.Generator,
  *,
  with_position: bool = True,
) -> str:
  """Noun phrase for ``obj`` stating exactly the attributes in ``stated``
  (positions only if ``with_position``)."""
  size = _pick(rng, SIZE_WORDS[obj.size]) if shapes_scene.SIZE in stated else ""
  colour = _pick(rng, COLOUR_WORDS[obj.colour]) if shapes_scene.COLOUR in stated else ""
  if shapes_scene.SHAPE in stated:
    noun = _pick(rng, SHAPE_WORDS[obj.shape])
  else:
    noun = _pick(rng, GENERIC_NOUNS)
  u = rng.random()
  clause = False  # a relative clause ("that is red") is already used
  if shapes_scene.SHAPE not in stated and colour and not size and u < 0.25:
    phrase = f"something {colour}"
  elif colour and u < 0.45:
    core = " ".join(w for w in (size, noun) if w)
    tail = _pick(rng, (f"that is {colour}", f"in {colour}", f"colored {colour}"))
    clause = tail.startswith("that")
    phrase = f"{_article(core)} {core} {tail}"
  elif colour and size and u < 0.55:
    phrase = f"{_article(colour)} {colour} {size} {noun}"
  else:
    core = " ".join(w for w in (size, colour, noun) if w)
    phrase = f"{_article(core)} {core}"
  if with_position and (shapes_scene.ROW in stated or shapes_scene.COL in stated):
    pos = _position_phrase(
      obj.row if shapes_scene.ROW in stated else -1,
      obj.col if shapes_scene.COL in stated else -1,
      rng,
    )
    joiner = " " if clause else _pick(rng, (" ", " ", " which is ", " that is "))
    phrase = f"{phrase}{joiner}{pos}"
  return phrase


def _join(parts: Sequence[str], rng: np.random.Generator) -> str:
  if len(parts) == 1:
    return parts[0]
  sep = _pick(rng, (" and ", " as well as ", " plus ")) if len(parts) == 2 else " and "
  return ", ".join(parts[:-1]) + sep + parts[-1]


def _count_phrase(n: int, rng: np.random.Generator) -> str:
  return f"{_pick(rng, COUNT_WORDS[n])} " + (
    _pick(rng, GENERIC_NOUNS) if n == 1 else _plural(_pick(rng, GENERIC_NOUNS))
  )


# ----------------------------------------------------------------------------
# Caption templates: each returns (text, facts) or None when not applicable.


def _caption_single(scene: shapes_scene.Scene, rng: np.random.Generator):
  """One object, some of its attributes; position before or after the noun."""
  obj = scene.objects[int(rng.integers(len(scene.objects)))]
  stated = _choose_stated(rng, p_shape=0.85, p_colour=0.85, p_size=0.45, p_position=0.55)
  facts = CaptionFacts(mentions=(_mention(obj, stated),))
  has_pos = shapes_scene.ROW in stated or shapes_scene.COL in stated
  if has_pos and rng.random() < 0.35:
    np_ = _noun_phrase(obj, stated, rng, with_position=False)
    pos = _position_phrase(
      obj.row if shapes_scene.ROW in stated else -1,
      obj.col if shapes_scene.COL in stated else -1,
      rng,
    )
    text = f"{pos} " + _pick(rng, ("there is ", "we see ", "", "you can see ")) + np_
  else:
    text = _pick(rng, OPENERS) + _noun_phrase(obj, stated, rng)
  return text, facts


def _caption_listing(scene: shapes_scene.Scene, rng: np.random.Generator, *, rich: bool = False):
  """All objects (random order), optionally prefixed by their count."""
  order = rng.permutation(len(scene.objects))
  mentions, parts = [], []
  for i in order:
    obj = scene.objects[int(i)]
    stated = _choose_stated(
      rng,
      p_shape=0.95 if rich else 0.8,
      p_colour=0.95 if rich else 0.8,
      p_size=0.5 if rich else 0.3,
      p_position=0.3 if rich else 0.2,
    )
    mentions.append(_mention(obj, stated))
    parts.append(_noun_phrase(obj, stated, rng))
  body = _join(parts, rng)
  n = len(scene.objects)
  count = -1
  u = rng.random()
  if n > 1 and u < 0.4:
    count = n
    text = _pick(
      rng, ("{c}: {b}", "{c}, namely {b}", "a scene with {c}: {b}", "there are {c}: {b}")
    ).format(c=_count_phrase(n, rng), b=body)
  else:
    text = _pick(rng, OPENERS) + body
  return text, CaptionFacts(mentions=tuple(mentions), count=count)


def _caption_relation(scene: shapes_scene.Scene, rng: np.random.Generator):
  """Two objects and a spatial relation that holds between them."""
  if len(scene.objects) < 2:
    return None
  i, j = (int(v) for v in rng.choice(len(scene.objects), size=2, replace=False))
  a, b = scene.objects[i], scene.objects[j]
  options = []
  if a.col < b.col:
    options.append(LEFT_OF)
  if a.col > b.col:
    options.append(RIGHT_OF)
  if a.row < b.row:
    options.append(ABOVE)
  if a.row > b.row:
    options.append(BELOW)
  rel = options[int(rng.integers(len(options)))]
  sa = _choose_stated(rng, p_shape=0.9, p_colour=0.8, p_size=0.25, p_position=0.0)
  sb = _choose_stated(rng, p_shape=0.9, p_colour=0.8, p_size=0.25, p_position=0.0)
  pa, pb = _noun_phrase(a, sa, rng), _noun_phrase(b, sb, rng)
  phrase = _pick(rng, RELATION_PHRASES[rel])
  u = rng.random()
  if u < 0.5:
    text = f"{pa} {phrase} {pb}"
  elif u < 0.75:
    text = f"{pa} is {phrase} {pb}"
  else:
    text = f"{phrase} {pb} " + _pick(rng, ("there is ", "is ", "sits ")) + pa
  facts = CaptionFacts(mentions=(_mention(a, sa), _mention(b, sb)), relation=(0, rel, 1))
  return text, facts


def _caption_count(scene: shapes_scene.Scene, rng: np.random.Generator):
  """The number of objects, alone or with one object described."""
  n = len(scene.objects)
  if rng.random() < 0.5:
    text = _pick(
      rng,
      (
        "{c}",
        "there are {c}",
        "a dark picture with {c}",
        "an image of {c} on a dark background",
        "{c} in total",
      ),
    ).format(c=_count_phrase(n, rng))
    if n == 1 and text.startswith("there are"):
      text = "there is " + text[len("there are ") :]
    return text, CaptionFacts(count=n)
  obj = scene.objects[int(rng.integers(n))]
  stated = _choose_stated(rng, p_shape=0.8, p_colour=0.8, p_size=0.3, p_position=0.2)
  np_ = _noun_phrase(obj, stated, rng)
  if n == 1:
    text = f"only one {_pick(rng, GENERIC_NOUNS)}: {np_}"
  else:
    text = _pick(rng, ("{c}, one of them {m}", "{c} including {m}", "{m} among {c}")).format(
      c=_count_phrase(n, rng), m=np_
    )
  return text, CaptionFacts(mentions=(_mention(obj, stated),), count=n)


def _caption_group(scene: shapes_scene.Scene, rng: np.random.Generator):
  """Objects sharing a shape or a colour, described in the plural."""
  for attr in (
    (shapes_scene.SHAPE, shapes_scene.COLOUR)
    if rng.random() < 0.5
    else (shapes_scene.COLOUR, shapes_scene.SHAPE)
  ):
    values = [o.attributes()[attr] for o in scene.objects]
    shared = [v for v in set(values) if values.count(v) >= 2]
    if not shared:
      continue
    v = shared[0]
    k = values.count(v)
    if attr == shapes_scene.SHAPE:
      group = f"{_pick(rng, COUNT_WORDS[k])} {_plural(_pick(rng, SHAPE_WORDS[v]))}"
    else:
      group = (
        f"{_pick(rng, COUNT_WORDS[k])} {_pick(rng, COLOUR_WORDS[v])} "
        f"{_plural(_pick(rng, GENERIC_NOUNS))}"
      )
    mentions = [Mention(**{("shape" if attr == shapes_scene.SHAPE else "colour"): v})] * k
    text = _pick(rng, OPENERS[:3] + ("there are ", "we can see ")) + group
    rest = [o for o in scene.objects if o.attributes()[attr] != v]
    if rest and rng.random() < 0.6:
      stated = _choose_stated(rng, p_shape=0.9, p_colour=0.8, p_size=0.3, p_position=0.2)
      mentions.append(_mention(rest[0], stated))
      text += " and " + _noun_phrase(rest[0], stated, rng)
    return text, CaptionFacts(mentions=tuple(mentions))
  return None


_TEMPLATES = (
  (_caption_single, 0.3),
  (_caption_listing, 0.25),
  (_caption_relation, 0.25),
  (_caption_count, 0.12),
  (_caption_group, 0.08),
)


def generate_captions(
  scene: shapes_scene.Scene, rng: np.random.Generator, num: int = CAPTIONS_PER_IMAGE
) -> list[tuple[str, CaptionFacts]]:
  """``num`` distinct captions of ``scene`` with their facts.

  The first is a rich listing of all objects; the others are drawn from the
  templates (single object 0.3, listing 0.25, relation 0.25, count 0.12,
  plural group 0.08; inapplicable ones are redrawn). Deterministic given ``rng``.
  """
  cumulative = np.cumsum([w for _, w in _TEMPLATES])
  cumulative = cumulative / cumulative[-1]
  out = [_caption_listing(scene, rng, rich=True)]
  seen = {out[0][0]}
  attempts = 0
  while len(out) < num:
    attempts += 1
    if attempts > 1000:
      raise RuntimeError(f"generate_captions: could not find {num} distinct captions for {scene}")
    fn = _TEMPLATES[int(np.searchsorted(cumulative, rng.random(), side="right"))][0]
    result = fn(scene, rng)
    if result is None or result[0] in seen:
      continue
    seen.add(result[0])
    out.append(result)
  return out


def stack_facts(facts: Sequence[CaptionFacts]) -> np.ndarray:
  """``[N, FACT_FIELDS]`` int32 of packed facts."""
  return np.stack([f.to_array() for f in facts]).astype(np.int32)
