"""Ctrl-C (SIGINT) in a console script: one line and exit status 130, wherever it lands.

Python alone misses two places:

* **While the app starts.** Before :meth:`jitr.apps._cli.App.run` takes over, Python is
  importing the app (the relevance apps load JAX to define their flags), and a
  ``KeyboardInterrupt`` there is a traceback of the import machinery. Every console script
  imports :mod:`jitr.apps` first, which installs :func:`exit_at_once`'s handler: one line
  ``NAME: interrupted (Ctrl-C)`` and exit status 130 at once (``os._exit``: nothing has
  been written yet, and half-imported libraries run no exit hooks).
* **Inside a garbage-collector callback.** JAX registers one (it runs at every
  collection, often while modules import); a ``KeyboardInterrupt`` raised there cannot
  propagate, so Python prints it as "Exception ignored in: ..." and goes on: the Ctrl-C
  would be lost and the command run to its end. :func:`raise_keyboard_interrupt`, the
  handler :func:`raise_on_ctrl_c` installs when ``App.run`` takes over, raises it as
  Python's own handler does, except inside such a callback: there a thread sends the
  signal to the main thread again once the callback has returned, and it is raised then.

Once the app runs, a Ctrl-C is thus a ``KeyboardInterrupt`` the app turns into its own
line (its ``finally`` blocks remove temporary files first).
"""

from __future__ import annotations

import _thread
import gc
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

# Exit status of a command stopped by Ctrl-C (SIGINT): 128 + 2, as the shells report it.
INTERRUPTED_EXIT_STATUS = 130


def exit_at_once(name: str) -> Callable[[int, Any], None]:
  """A SIGINT handler that writes ``NAME: interrupted (Ctrl-C)`` to stderr and ends the
  process with :data:`INTERRUPTED_EXIT_STATUS` at once, wherever it was."""

  def handler(signum: int, frame: Any) -> None:
    del signum, frame
    os.write(2, f"{name}: interrupted (Ctrl-C)\n".encode())
    os._exit(INTERRUPTED_EXIT_STATUS)

  handler.exits_while_starting = True
  return handler


def _in_main_thread() -> bool:
  return threading.current_thread() is threading.main_thread()


def exit_on_ctrl_c_while_starting(name: str) -> None:
  """Installs :func:`exit_at_once`'s handler for the console script ``name``, when SIGINT
  has Python's own handler (not ignored, nor another program's) and this is the main
  thread (the only one that may set handlers)."""
  if _in_main_thread() and signal.getsignal(signal.SIGINT) is signal.default_int_handler:
    signal.signal(signal.SIGINT, exit_at_once(name))


def gc_callback_codes() -> set[Any]:
  """The code objects of the garbage collector's callbacks (``gc.callbacks``: functions
  and bound methods; other callables have none)."""
  codes = set()
  for callback in gc.callbacks:
    function = getattr(callback, "__func__", callback)
    code = getattr(function, "__code__", None)
    if code is not None:
      codes.add(code)
  return codes


def in_gc_callback(frame: Any) -> bool:
  """Whether ``frame`` or a frame it was called from runs a garbage-collector callback
  (where an exception cannot propagate)."""
  codes = gc_callback_codes()
  while frame is not None:
    if frame.f_code in codes:
      return True
    frame = frame.f_back
  return False


def signal_main_thread() -> None:
  """Sends SIGINT to the main thread (``pthread_kill``: a blocking call there returns to
  run the handler), or, where threads cannot be signalled, marks it pending
  (``_thread.interrupt_main``)."""
  main = threading.main_thread().ident
  if hasattr(signal, "pthread_kill") and main is not None:
    signal.pthread_kill(main, signal.SIGINT)
  else:
    _thread.interrupt_main()


def signal_after_gc_callbacks(poll_s: float = 0.005) -> None:
  """Waits until the main thread runs outside garbage-collector callbacks (looking at its
  frame every ``poll_s`` seconds), then sends it SIGINT again
  (:func:`signal_main_thread`); returns at once when it has ended."""
  main = threading.main_thread().ident
  while True:
    frame = sys._current_frames().get(main)
    if frame is None:
      return
    if not in_gc_callback(frame):
      signal_main_thread()
      return
    time.sleep(poll_s)


def raise_keyboard_interrupt(signum: int, frame: Any) -> None:
  """The SIGINT handler once the app runs: raises ``KeyboardInterrupt`` as Python's own
  does, except inside a garbage-collector callback (:func:`in_gc_callback`), where it
  would be lost: there a thread sends the signal again once the callback has returned
  (:func:`signal_after_gc_callbacks`)."""
  del signum
  if in_gc_callback(frame):
    threading.Thread(
      target=signal_after_gc_callbacks, name="jitr-ctrl-c-after-gc", daemon=True
    ).start()
    return
  raise KeyboardInterrupt


def raise_on_ctrl_c() -> None:
  """From now on a Ctrl-C is a ``KeyboardInterrupt``, never lost in a garbage-collector
  callback: :func:`raise_keyboard_interrupt` replaces Python's handler or
  :func:`exit_at_once`'s (a handler another program installed, or SIGINT ignored, is
  left as it is). Main thread only, as every signal handler."""
  handler = signal.getsignal(signal.SIGINT)
  starting = getattr(handler, "exits_while_starting", False)
  if _in_main_thread() and (starting or handler is signal.default_int_handler):
    signal.signal(signal.SIGINT, raise_keyboard_interrupt)
