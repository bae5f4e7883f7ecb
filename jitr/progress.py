"""Progress of a long job, for a person: items done of the total, items per second, ETA.

One line per job, e.g.::

    sentence relevance: 2048/5000 images (40%), 85.3 images/s, ETA 35s
    sentence relevance: 5000/5000 images (100%), 84.1 images/s, took 59s

The text comes from pure functions (:func:`rate_per_second`, :func:`eta_seconds`,
:func:`format_count`, :func:`format_rate`, :func:`format_duration`,
:func:`progress_line`); :class:`Progress` draws it, on stderr by default and never on
stdout (stdout may be piped into a file or another program):

* on a terminal (the stream is a TTY) it redraws one line in place (``\\r``): at once, after
  the first item (the first rate and ETA), then at most every :data:`TTY_INTERVAL_S`
  seconds, and ends it with a newline when closed;
* elsewhere (a log file, CI, a pipe) it writes a plain line after the first item (the
  first rate and ETA), then at most every ``interval_s`` seconds (:data:`LOG_INTERVAL_S`,
  10, by default) and one final line when closed, so a log file gets a few lines, not one
  per item.

The rate counts only the time the job worked: a block run in :meth:`Progress.paused`
(e.g. a validation inside a training) and the seconds passed to :meth:`Progress.exclude`
(e.g. compiling) are left out, and so are the items done before it started (``initial``:
the steps a resumed run restored) and the items done while paused. A line redrawn in place
stays the last line of the terminal: :func:`say` (one short line, e.g. what a run is doing
now) and every record of the root logger's handlers are written above it, and a second
line started while one is shown takes its place until it is closed. :class:`Steps` draws
the line of a job of a few named steps (one :func:`say` line per step).

``enabled=False``, or a total below ``min_total``, silences it. A shared utility (like
:mod:`jitr.fileio`): standard library only, so any jitr subpackage may import it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import math
import os
import sys
import time
from collections.abc import Callable, Iterator
from typing import IO, Any

LOG_INTERVAL_S = 10.0  # seconds between two lines when the stream is not a terminal
TTY_INTERVAL_S = 0.2  # seconds between two redraws of the line on a terminal
DEFAULT_WIDTH = 80  # a terminal's width when it cannot be read


def rate_per_second(done: int, elapsed_s: float) -> float | None:
  """Items per second: ``done / elapsed_s``; ``None`` before any time has passed.

  >>> rate_per_second(150, 60.0)
  2.5
  >>> rate_per_second(0, 0.0) is None
  True
  """
  if elapsed_s <= 0:
    return None
  return done / elapsed_s


def eta_seconds(
  done: int, total: int, elapsed_s: float, counted: int | None = None
) -> float | None:
  """Seconds left at the rate so far: ``(total - done) * elapsed_s / counted``, where
  ``counted`` (``done`` by default) items took ``elapsed_s``; 0 once ``done >= total``;
  ``None`` while nothing is counted or no time has passed.

  >>> eta_seconds(25, 100, 10.0)
  30.0
  >>> eta_seconds(60, 100, 10.0, counted=20)  # 40 before a resume, 20 in 10 s since
  20.0
  >>> eta_seconds(0, 100, 10.0) is None
  True
  """
  counted = done if counted is None else counted
  if done >= total:
    return 0.0
  if counted <= 0 or elapsed_s <= 0:
    return None
  return (total - done) * elapsed_s / counted


def format_count(count: int) -> str:
  """A count as a person reads it: exact below a million, else three significant digits
  with ``M`` (millions) or ``G`` (billions).

  >>> format_count(5000), format_count(1_234_567), format_count(125_000_000)
  ('5000', '1.23M', '125M')
  >>> format_count(2_500_000_000), format_count(999_600_000)
  ('2.50G', '1.00G')
  """
  count = int(count)
  if abs(count) < 1_000_000:
    return str(count)
  if abs(count) < 999_500_000:  # 999.5M and up round to 1.00G, not 1000M
    return _three_digits(count / 1e6) + "M"
  return _three_digits(count / 1e9) + "G"


def _three_digits(value: float) -> str:
  """``value`` (>= 1) with three significant digits: ``1.23``, ``12.3``, ``123``."""
  for limit, decimals in ((10, 2), (100, 1)):
    if abs(round(value, decimals)) < limit:
      return f"{value:.{decimals}f}"
  return f"{value:.0f}"


def singular(unit: str) -> str:
  """The singular of a plural unit name: a trailing ``s`` dropped (``images`` -> ``image``).

  >>> singular("images"), singular("pairs"), singular("MB")
  ('image', 'pair', 'MB')
  """
  return unit[:-1] if unit.endswith("s") and len(unit) > 1 else unit


def format_rate(rate: float, unit: str) -> str:
  """``rate`` items per second of ``unit`` (plural): ``X unit/s`` from one item a second
  up (one decimal below 100, :func:`format_count` above), else the seconds one item
  takes, ``Ns/item``.

  >>> format_rate(85.32, "images"), format_rate(3_200_000, "pairs")
  ('85.3 images/s', '3.20M pairs/s')
  >>> format_rate(0.04, "sources"), format_rate(0.0, "images")
  ('25.0s/source', '0 images/s')
  """
  if rate >= 1 or rate <= 0:
    shown = f"{rate:.1f}" if 0 < rate < 100 else format_count(round(rate))
    return f"{shown} {unit}/s"
  seconds = 1.0 / rate
  shown = f"{seconds:.1f}s" if seconds < 60 else format_duration(seconds)
  return f"{shown}/{singular(unit)}"


def format_duration(seconds: float) -> str:
  """A duration, rounded to the second, in its two largest units: ``42s``, ``3m05s``,
  ``1h02m``, ``2d03h``.

  >>> format_duration(42.4), format_duration(185), format_duration(3725), format_duration(183600)
  ('42s', '3m05s', '1h02m', '2d03h')
  """
  s = max(0, int(round(seconds)))
  if s < 60:
    return f"{s}s"
  if s < 3600:
    return f"{s // 60}m{s % 60:02d}s"
  if s < 86400:
    return f"{s // 3600}h{s % 3600 // 60:02d}m"
  return f"{s // 86400}d{s % 86400 // 3600:02d}h"


def percent_done(done: int, total: int) -> int:
  """Whole percent of ``total`` done, rounded down (100 only when all is done; an empty
  job is 100).

  >>> percent_done(1, 3), percent_done(999, 1000), percent_done(0, 0)
  (33, 99, 100)
  """
  if total <= 0:
    return 100
  return min(100, math.floor(100 * done / total))


def progress_line(
  label: str,
  done: int,
  total: int,
  unit: str,
  elapsed_s: float,
  *,
  final: bool = False,
  counted: int | None = None,
  wall_s: float | None = None,
) -> str:
  """The line a person reads: ``LABEL: DONE/TOTAL UNIT (P%), RATE, ETA T``.

  The rate is ``counted`` items (``done`` by default) in ``elapsed_s`` seconds; while
  running the last part is the ETA at that rate (:func:`eta_seconds`; left out while
  unknown); the ``final`` line says how long the job ``took``, or how long it ran before
  it ``stopped`` short of the total: ``wall_s`` (``elapsed_s`` by default), and
  ``elapsed_s`` beside it when the time left out of the rate is a second and a tenth of
  the whole or more. An empty ``label`` leaves out ``LABEL: ``.

  >>> progress_line("sentence relevance", 2000, 5000, "images", 25.0)
  'sentence relevance: 2000/5000 images (40%), 80.0 images/s, ETA 38s'
  >>> progress_line("", 5000, 5000, "images", 62.0, final=True)
  '5000/5000 images (100%), 80.6 images/s, took 1m02s'
  >>> progress_line("eval", 3, 8, "blocks", 6.0, final=True)
  'eval: 3/8 blocks (37%), 2.0s/block, stopped after 6s'
  >>> progress_line("train", 60, 100, "steps", 10.0, counted=20)
  'train: 60/100 steps (60%), 2.0 steps/s, ETA 20s'
  >>> progress_line("train", 100, 100, "steps", 50.0, final=True, counted=60, wall_s=95.0)
  'train: 100/100 steps (100%), 1.2 steps/s, took 1m35s (50s of it on the steps)'
  """
  counted = done if counted is None else counted
  head = f"{label}: " if label else ""
  parts = [
    f"{head}{format_count(done)}/{format_count(total)} {unit} ({percent_done(done, total)}%)"
  ]
  rate = rate_per_second(counted, elapsed_s)
  if rate is not None and counted > 0:
    parts.append(format_rate(rate, unit))
  if final:
    verb = "took" if done >= total else "stopped after"
    parts.append(f"{verb} {format_duration(elapsed_s if wall_s is None else wall_s)}")
    if wall_s is not None and wall_s - elapsed_s >= max(1.0, 0.1 * wall_s):
      parts[-1] += f" ({format_duration(elapsed_s)} of it on the {unit})"
  else:
    eta = eta_seconds(done, total, elapsed_s, counted)
    if eta is not None:
      parts.append(f"ETA {format_duration(eta)}")
  return ", ".join(parts)


def fit_width(line: str, width: int) -> str:
  """``line`` cut to ``width - 1`` characters (a terminal line that wraps can no longer be
  redrawn in place by ``\\r``; the last column is left free).

  >>> fit_width("abcdef", 4)
  'abc'
  """
  return line[: max(1, width - 1)]


def stream_width(stream: IO[str]) -> int:
  """The column count of the terminal ``stream`` writes to (:data:`DEFAULT_WIDTH` when it
  cannot be read)."""
  try:
    return os.get_terminal_size(stream.fileno()).columns or DEFAULT_WIDTH
  except (AttributeError, OSError, ValueError):
    return DEFAULT_WIDTH


def is_terminal(stream: IO[str]) -> bool:
  """Whether ``stream`` is a terminal (a stream without ``isatty`` is not)."""
  try:
    return bool(stream.isatty())
  except (AttributeError, OSError, ValueError):
    return False


# Progress lines now redrawn in place, the one on the terminal last (a line started while
# another is shown takes its place until it is closed).
_SHOWN: list[Progress] = []
_AROUND_LINE = "_jitr_around_progress_line"  # marks a handler whose emit keeps the line last


def _hide_shown() -> Progress | None:
  """Erases the line shown now (if any) and returns its :class:`Progress`."""
  if not _SHOWN:
    return None
  top = _SHOWN[-1]
  top._erase()
  return top


def _show_again(top: Progress | None) -> None:
  """Draws ``top``'s line again after :func:`_hide_shown` (if it is still shown)."""
  if top is not None and _SHOWN and _SHOWN[-1] is top:
    top._draw(top.line(top.clock()))


def keep_line_below_logs(logger: logging.Logger | None = None) -> None:
  """Makes every handler of ``logger`` (the root logger by default, which holds absl's)
  erase the shown progress line before it writes a record and draw it again after, so a
  log line never runs into it; a record its filters drop leaves the line alone.
  Idempotent. (absl's handler passes records to the handler it holds, whose ``emit`` is
  the one wrapped.)"""
  for handler in (logger or logging.getLogger()).handlers:
    writer = getattr(handler, "python_handler", handler)
    if getattr(writer, _AROUND_LINE, False):
      continue
    emit = writer.emit

    def emit_above_line(record: logging.LogRecord, emit: Callable[..., Any] = emit) -> None:
      top = _hide_shown()
      try:
        emit(record)
      finally:
        _show_again(top)

    writer.emit = emit_above_line  # type: ignore[method-assign]
    setattr(writer, _AROUND_LINE, True)


def on_terminal(stream: IO[str] | None = None) -> bool:
  """Whether ``stream`` (stderr by default) is a terminal: where the lines saying what a
  job does now (:func:`say`) go. A log gets the job's progress lines and its own log
  records, and a job that fails there still ends in the one line of its error."""
  return is_terminal(sys.stderr if stream is None else stream)


def say(text: str, *, enabled: bool = True, stream: IO[str] | None = None) -> None:
  """Writes ``text`` as one line on ``stream`` (stderr), above a progress line shown on it:
  what a long job is doing now (``loading data``, ``compiling the train step``; callers
  say those on a terminal only, :func:`on_terminal`). ``enabled=False`` writes nothing
  (e.g. on every process but the first); a stream that fails is ignored."""
  if not enabled:
    return
  stream = sys.stderr if stream is None else stream
  top = _hide_shown()
  try:
    stream.write(text + "\n")
    stream.flush()
  except (OSError, ValueError):
    pass
  _show_again(top)


@dataclasses.dataclass(frozen=True)
class Display:
  """Where a :class:`Progress` line goes and how it is drawn."""

  stream: IO[str] | None = None
  """Where the line goes; ``sys.stderr`` when None."""
  interval_s: float = LOG_INTERVAL_S
  """Seconds between two lines when the stream is not a terminal."""
  redraw: bool | None = None
  """Redraw one line in place (``\\r``); None: when the stream is a terminal."""
  clock: Callable[[], float] = time.monotonic
  """Seconds, monotonic (``time.monotonic``; tests pass their own)."""


class Progress:
  """Draws :func:`progress_line` of a job of ``total`` items on ``stream`` (stderr).

  ``advance(n)`` after each piece of work, ``close()`` (or a ``with`` block) at the end;
  see the module docstring for when it writes. Use as::

      with Progress(len(shards), "shards", label="precompute") as progress:
        for shard in shards:
          ...
          progress.advance()

  Args:
    total: the items the job has in all.
    unit: their name, plural (``images``, ``captions``, ``pairs``).
    label: what the job is; the line starts with ``LABEL: ``.
    enabled: False draws nothing (e.g. on every process but the first).
    min_total: a total below it draws nothing (a job too small to watch).
    initial: items done before the job started here (a resumed run's restored steps):
      counted in the total done, not in the rate.
    display: where the line goes, how often and how it is drawn (:class:`Display`).
  """

  def __init__(
    self,
    total: int,
    unit: str,
    *,
    label: str = "",
    enabled: bool = True,
    min_total: int = 1,
    initial: int = 0,
    display: Display = Display(),
  ) -> None:
    self.total, self.unit, self.label = int(total), unit, label
    self.done = int(initial)
    self.counted = 0  # items the rate counts: done here, not while paused
    self.enabled = bool(enabled) and self.total >= min_total
    self.stream = sys.stderr if display.stream is None else display.stream
    self.redraw = is_terminal(self.stream) if display.redraw is None else bool(display.redraw)
    self.interval_s = TTY_INTERVAL_S if self.redraw else float(display.interval_s)
    self.clock = display.clock
    self.start = self.clock()
    self.excluded_s = 0.0  # seconds left out of the rate (paused, compiling)
    self._paused_since: float | None = None
    self._pauses = 0  # nested paused() blocks open
    self._last_draw: float | None = None  # clock time of the last line (None: none yet)
    self._rate_drawn = False  # whether a line with a rate was drawn (the first is at once)
    self._drawn_width = 0  # characters of the line now on the terminal (redraw mode)
    self._closed = False
    if self.enabled and self.redraw:
      keep_line_below_logs()
      _hide_shown()  # a line shown before gives this one its place until it is closed
      _SHOWN.append(self)
      self._draw(self.line(self.start))  # the total, at once
      self._last_draw = self.start

  def working_seconds(self, now: float) -> float:
    """Seconds since the start at clock time ``now``, less those left out of the rate."""
    paused = now - self._paused_since if self._paused_since is not None else 0.0
    return max(0.0, now - self.start - self.excluded_s - paused)

  def line(self, now: float, *, final: bool = False) -> str:
    """The :func:`progress_line` at clock time ``now``."""
    return progress_line(
      self.label,
      self.done,
      self.total,
      self.unit,
      self.working_seconds(now),
      final=final,
      counted=self.counted,
      wall_s=now - self.start,
    )

  def advance(self, count: int = 1) -> None:
    """Counts ``count`` more items done; draws the line after the first item the rate
    counts (its first rate and ETA at once) and whenever ``interval_s`` has passed since
    the last one (in a log, not once all is done: the final line follows)."""
    self.done += int(count)
    if self._pauses == 0:
      self.counted += int(count)
    if not self.enabled or self._closed or (not self.redraw and self.done >= self.total):
      return
    if self.redraw and _SHOWN and _SHOWN[-1] is not self:
      return  # another line has its place until it is closed
    now = self.clock()
    first_rate = self.counted > 0 and not self._rate_drawn
    if first_rate or self._last_draw is None or now - self._last_draw >= self.interval_s:
      self._draw(self.line(now))
      self._last_draw = now
      self._rate_drawn = self._rate_drawn or self.counted > 0

  def update(self, done: int) -> None:
    """Sets the items done to ``done`` (no fewer than now): :meth:`advance` by the difference."""
    if int(done) > self.done:
      self.advance(int(done) - self.done)

  def exclude(self, seconds: float) -> None:
    """Leaves ``seconds`` of the time so far out of the rate (e.g. compiling)."""
    self.excluded_s += max(0.0, float(seconds))

  @contextlib.contextmanager
  def paused(self) -> Iterator[None]:
    """Leaves the block's time, and the items done in it, out of the rate (nested blocks
    count once)."""
    if self._pauses == 0:
      self._paused_since = self.clock()
    self._pauses += 1
    try:
      yield
    finally:
      self._pauses -= 1
      if self._pauses == 0 and self._paused_since is not None:
        self.excluded_s += self.clock() - self._paused_since
        self._paused_since = None

  def close(self) -> None:
    """Draws the final line (:func:`progress_line` with ``final``) and ends it; later calls
    do nothing. A line it had taken the place of is drawn again below it."""
    if self._closed:
      return
    self._closed = True
    shown = self in _SHOWN
    if shown and _SHOWN[-1] is not self:  # closed while another line has its place
      _SHOWN.remove(self)
      return
    if self.enabled:
      self._draw(self.line(self.clock(), final=True))
      if self.redraw:
        self._write("\n")
        self._drawn_width = 0
    if shown:
      _SHOWN.remove(self)
      _show_again(_SHOWN[-1] if _SHOWN else None)

  def wrap_log(self, log: Callable[[str], Any]) -> Callable[[str], Any]:
    """``log`` for messages written while the line is shown: when the line is redrawn in
    place, the line is erased before each message and drawn again after it (so neither
    runs into the other); otherwise ``log`` itself. (An absl app registers
    ``log_around_line`` as a frame for absl's logging to skip, so its lines name their
    own caller.)"""
    if not (self.enabled and self.redraw):
      return log

    def log_around_line(message: str) -> None:
      if not self.enabled or self._closed:
        log(message)
        return
      self._erase()
      log(message)
      if _SHOWN and _SHOWN[-1] is self:
        self._draw(self.line(self.clock()))

    return log_around_line

  def __enter__(self) -> Progress:
    return self

  def __exit__(self, *exc: object) -> None:
    self.close()

  def _erase(self) -> None:
    """Blanks the line drawn in place (nothing when none is drawn)."""
    if self.enabled and self.redraw and self._drawn_width:
      self._write("\r" + " " * self._drawn_width + "\r")
      self._drawn_width = 0

  def _draw(self, line: str) -> None:
    if self.redraw:
      line = fit_width(line, stream_width(self.stream))
      pad = " " * max(0, self._drawn_width - len(line))
      self._write("\r" + line + pad)
      self._drawn_width = len(line)
    else:
      self._write(line + "\n")

  def _write(self, text: str) -> None:
    """Writes and flushes ``text``; a stream that fails (closed, a broken pipe) silences
    the progress rather than the job."""
    try:
      self.stream.write(text)
      self.stream.flush()
    except (OSError, ValueError):
      self.enabled = False


class Steps:
  """A job of a few named steps: :meth:`begin` says each step's name (a :func:`say` line)
  and counts the step before it done on one :class:`Progress` line of ``steps``; leaving a
  ``with`` block without an error counts the last one. Use as::

      with Steps(("reading the checkpoint", "writing the workdir"), label="import") as steps:
        steps.begin("reading the checkpoint")
        ...
        steps.begin("writing the workdir")
        ...

  ``names`` are the steps in order; ``enabled`` is :class:`Progress`'s, ``stream``,
  ``redraw`` and ``clock`` its :class:`Display`'s; ``say_names``: whether the names are
  said (None: on a terminal).
  """

  def __init__(
    self,
    names: tuple[str, ...],
    *,
    label: str,
    enabled: bool = True,
    stream: IO[str] | None = None,
    redraw: bool | None = None,
    clock: Callable[[], float] = time.monotonic,
    say_names: bool | None = None,
  ) -> None:
    self.names, self.enabled, self.stream = tuple(names), bool(enabled), stream
    self.say_names = on_terminal(stream) if say_names is None else bool(say_names)
    self.begun = 0  # steps begun so far
    self.progress = Progress(
      len(self.names),
      "steps",
      label=label,
      enabled=enabled,
      display=Display(stream=stream, redraw=redraw, clock=clock),
    )

  def begin(self, name: str) -> None:
    """Starts the step ``name`` (the next of ``names``): the step before is done."""
    if self.begun >= len(self.names) or self.names[self.begun] != name:
      expected = self.names[self.begun] if self.begun < len(self.names) else "none"
      raise ValueError(f"step {name!r} begun out of order (expected {expected!r})")
    if self.begun:
      self.progress.advance()
    self.begun += 1
    say(name, enabled=self.progress.enabled and self.say_names, stream=self.stream)

  def __enter__(self) -> Steps:
    return self

  def __exit__(self, exc_type: object, *exc: object) -> None:
    if exc_type is None and self.begun:
      self.progress.advance()  # the last step begun is done
    self.progress.close()
