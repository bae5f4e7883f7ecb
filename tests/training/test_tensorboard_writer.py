"""The TensorFlow-free TensorBoard writer and the training reporter built on it."""

import json
import subprocess
import sys

import numpy as np
import pytest

from jitr.training import progress_report, reporting
from jitr.training.tensorboard_writer import TensorBoardWriter


def _read_back(logdir):
  """``{tag: [(step, value)]}`` and ``{tag: plugin name}`` of the scalars under ``logdir``,
  as TensorBoard's ``EventAccumulator`` reads them."""
  from tensorboard.backend.event_processing import event_accumulator
  from tensorboard.util import tensor_util

  acc = event_accumulator.EventAccumulator(str(logdir), size_guidance={"tensors": 0})
  acc.Reload()
  tags = acc.Tags()["tensors"]
  values = {
    tag: [(e.step, float(tensor_util.make_ndarray(e.tensor_proto))) for e in acc.Tensors(tag)]
    for tag in tags
  }
  plugins = {tag: acc.SummaryMetadata(tag).plugin_data.plugin_name for tag in tags}
  return values, plugins


def test_scalars_read_back_with_their_steps_values_and_plugin(tmp_path):
  with TensorBoardWriter(tmp_path / "tb") as writer:
    writer.write_scalars(1, {"train/loss": 0.5, "lr": 1e-3})
    writer.write_scalars(2, {"train/loss": 0.25})
    writer.write_scalars(3, {})  # nothing
    writer.write_scalars(7, {"train/loss": np.float32(-1.75), "val/full/rsum": 312})
  assert len(list((tmp_path / "tb").glob("events.out.tfevents.*.v2"))) == 1
  values, plugins = _read_back(tmp_path / "tb")
  assert values == {
    "train/loss": [(1, 0.5), (2, 0.25), (7, -1.75)],
    "lr": [(1, float(np.float32(1e-3)))],  # stored as float32, as tf.summary.scalar does
    "val/full/rsum": [(7, 312.0)],
  }
  assert set(plugins.values()) == {"scalars"}


def test_two_writers_in_one_process_write_two_files(tmp_path):
  for _ in range(2):
    TensorBoardWriter(tmp_path).close()
  assert len(list(tmp_path.glob("events.out.tfevents.*"))) == 2


def test_progress_message_gives_rate_eta_and_timed_shares():
  message = progress_report.progress_message(40, 100, 2.0, 80.0, {"eval": 8.0})
  assert message == "2.0 steps/s, 40.0% (40/100), ETA 30s (1m20s : 10.0% eval)"


def test_progress_reports_every_n_steps_and_the_last():
  class Recorder:
    def __init__(self):
      self.steps = []

    def write_scalars(self, step, scalars):
      self.steps.append((step, sorted(scalars)))

  writer = Recorder()
  report = progress_report.ProgressReport(total_steps=12, every_steps=5, writer=writer)
  fired = [s for s in range(1, 13) if report(s, now=float(s))]
  assert fired == [5, 10, 12]
  assert writer.steps == [(s, ["steps_per_sec", "uptime"]) for s in (5, 10, 12)]


def test_reporter_logs_and_writes_steps_per_sec(tmp_path):
  reporter = reporting.TrainReporter(
    str(tmp_path), total_steps=10, steps_per_epoch=5, every_steps=5
  )
  for step in range(1, 11):
    reporter.on_step(step, {"loss": np.float32(step)})
    if step % 3 == 0 and step % 5:  # validations within an epoch (every 3 steps)
      reporter.on_validation(step, {"full/rsum": 100.0 + step})
    if step % 5 == 0:
      reporter.on_validation(step, {"full/rsum": 100.0 + step})
      reporter.on_epoch(step // 5 - 1, {"full/rsum": 100.0 + step})
  with reporter.timed("eval"):
    pass
  reporter.close()
  values, _ = _read_back(tmp_path / "tensorboard")
  assert values["train/loss"] == [(5, 5.0), (10, 10.0)]
  assert [s for s, _ in values["steps_per_sec"]] == [5, 10]
  want = [(s, 100.0 + s) for s in (3, 5, 6, 9, 10)]
  assert values["val/full/rsum"] == want
  history = json.loads((tmp_path / "validation.json").read_text())
  assert history["steps_per_epoch"] == 5
  assert [(v["step"], v["epoch"], v["metrics"]) for v in history["validations"]] == [
    (s, s / 5, {"full/rsum": r}) for s, r in want
  ]
  # a resume from step 5 validates step 6 again: the history after it is written anew
  again = reporting.TrainReporter(str(tmp_path), total_steps=10, steps_per_epoch=5, every_steps=5)
  again.on_validation(6, {"full/rsum": 1.0})
  again.close()
  history = json.loads((tmp_path / "validation.json").read_text())["validations"]
  assert [(v["step"], v["metrics"]["full/rsum"]) for v in history] == [
    (3, 103.0),
    (5, 105.0),
    (6, 1.0),
  ]


def test_bad_every_steps_is_refused(tmp_path):
  with pytest.raises(ValueError, match="log_every_steps"):
    reporting.TrainReporter(str(tmp_path), total_steps=10, steps_per_epoch=5, every_steps=0)


_NO_TF = """
import sys
from absl import logging
from jitr.training import reporting
logging.use_absl_handler()
logging.set_verbosity(logging.INFO)
writer = reporting.default_writer(sys.argv[1])
reporter = reporting.TrainReporter(sys.argv[1], total_steps=3, steps_per_epoch=3, every_steps=1)
for step in (1, 2, 3):
  reporter.on_step(step, {"loss": 0.5 * step})
reporter.on_validation(3, {"full/rsum": 300.0})
reporter.on_epoch(0, {"full/rsum": 300.0})
reporter.close()
writer.close()
print("tensorflow" in sys.modules, "clu" in sys.modules)
"""


def test_reporting_imports_neither_tensorflow_nor_clu(tmp_path):
  out = subprocess.run(
    [sys.executable, "-c", _NO_TF, str(tmp_path)],
    capture_output=True,
    text=True,
    timeout=300,
  )
  assert out.returncode == 0, out.stderr[-3000:]
  assert out.stdout.split() == ["False", "False"]
  assert "steps/s" in out.stderr and "ETA" in out.stderr  # the progress line, logged
  assert "[3] train/loss=1.5" in out.stderr  # every scalar write is logged
