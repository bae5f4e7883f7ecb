"""``_cli.ending_on_a_lost_process``: a failed collective ends a process of a multi-process
job with one line and ``os._exit(1)``; a single process sees the error as raised."""

import jax
import pytest

from jitr.apps import _job as _cli


def _failed_collective():
  return jax.errors.JaxRuntimeError("DEADLINE_EXCEEDED: barrier timed out\nmore detail")


def test_a_single_process_sees_the_error_as_raised():
  with pytest.raises(jax.errors.JaxRuntimeError, match="DEADLINE_EXCEEDED"):
    with _cli.ending_on_a_lost_process("jitr-train", 1):
      raise _failed_collective()


def test_a_process_of_a_job_exits_1_with_one_line(monkeypatch, capsys):
  exits = []

  def fake_exit(status):
    exits.append(status)
    raise SystemExit(status)  # os._exit would end the test process

  monkeypatch.setattr(_cli.os, "_exit", fake_exit)
  with pytest.raises(SystemExit):
    with _cli.ending_on_a_lost_process("jitr-eval", 2):
      raise _failed_collective()
  assert exits == [1]
  assert capsys.readouterr().err == (
    "jitr-eval: error: a collective with the other processes of the job failed "
    "(DEADLINE_EXCEEDED: barrier timed out); another process probably stopped: see its log\n"
  )


def test_other_errors_and_a_clean_block_pass_through():
  with _cli.ending_on_a_lost_process("jitr-train", 2):
    value = 1
  assert value == 1
  with pytest.raises(ValueError, match="bad input"):
    with _cli.ending_on_a_lost_process("jitr-train", 2):
      raise ValueError("bad input")
