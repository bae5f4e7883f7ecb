"""The progress line (jitr.progress): its text, when it is written, where, and the long jobs
that draw it (jitr-precompute, the block-wise scoring of jitr-eval, the agreement loop)."""

from __future__ import annotations

import doctest
import io
import types
from pathlib import Path

import numpy as np
import pytest

from jitr import progress
from jitr.progress import (
  Display,
  Progress,
  Steps,
  eta_seconds,
  fit_width,
  format_count,
  format_duration,
  format_rate,
  percent_done,
  progress_line,
  rate_per_second,
)

REPO = Path(__file__).resolve().parents[1]


class FakeClock:
  """A clock the test sets: ``clock.now`` seconds."""

  def __init__(self, now: float = 0.0) -> None:
    self.now = now

  def __call__(self) -> float:
    return self.now


def test_the_docstring_examples_run():
  result = doctest.testmod(progress)
  assert result.attempted > 0 and result.failed == 0


def test_rate_and_eta_by_hand():
  assert rate_per_second(150, 60.0) == 2.5  # 150 items in a minute
  assert rate_per_second(0, 12.0) == 0.0
  assert rate_per_second(5, 0.0) is None  # no time has passed yet
  assert eta_seconds(25, 100, 10.0) == 30.0  # 75 left at 2.5 items/s
  assert eta_seconds(99, 100, 99.0) == 1.0
  assert eta_seconds(100, 100, 40.0) == 0.0
  assert eta_seconds(0, 100, 10.0) is None  # no rate yet
  assert eta_seconds(3, 100, 0.0) is None


def test_counts_durations_and_rates_as_a_person_reads_them():
  assert [format_count(n) for n in (0, 25, 999_999, 1_000_000, 12_345_678, 125_000_000)] == [
    "0", "25", "999999", "1.00M", "12.3M", "125M",
  ]  # fmt: skip
  assert format_count(3_000_000_000) == "3.00G"
  assert [format_duration(s) for s in (0, 0.4, 59.4, 60, 61, 3599, 3600, 3661, 90061)] == [
    "0s", "0s", "59s", "1m00s", "1m01s", "59m59s", "1h00m", "1h01m", "1d01h",
  ]  # fmt: skip
  assert format_rate(2.5, "images") == "2.5 images/s"
  assert format_rate(250.4, "captions") == "250 captions/s"
  assert format_rate(2_500_000.0, "pairs") == "2.50M pairs/s"
  assert format_rate(0.5, "images") == "2.0s/image"  # slower than one a second: time per item
  assert format_rate(1 / 90, "sources") == "1m30s/source"
  assert [percent_done(d, t) for d, t in ((0, 8), (1, 8), (7, 8), (8, 8), (0, 0))] == [
    0, 12, 87, 100, 100,
  ]  # fmt: skip


def test_the_line_while_running_and_when_closed():
  # 1200 of 5000 captions in 60 s: 20 captions/s, 3800 left -> 190 s
  line = progress_line("precompute", 1200, 5000, "captions", 60.0)
  assert line == "precompute: 1200/5000 captions (24%), 20.0 captions/s, ETA 3m10s"
  assert progress_line("", 0, 10, "images", 0.0) == "0/10 images (0%)"  # no rate, no ETA yet
  assert progress_line("x", 0, 10, "images", 5.0) == "x: 0/10 images (0%)"
  done = progress_line("precompute", 5000, 5000, "captions", 250.0, final=True)
  assert done == "precompute: 5000/5000 captions (100%), 20.0 captions/s, took 4m10s"
  short = progress_line("eval", 2_000_000, 5_000_000, "pairs", 4.0, final=True)
  assert short == "eval: 2.00M/5.00M pairs (40%), 500000 pairs/s, stopped after 4s"


def test_a_log_gets_a_line_after_the_first_item_then_one_per_interval_and_a_final_line():
  clock, out = FakeClock(), io.StringIO()
  shown = Progress(
    100,
    "images",
    label="job",
    display=Display(stream=out, interval_s=10, redraw=False, clock=clock),
  )
  assert out.getvalue() == ""  # nothing at the start
  for second in range(1, 36):  # 2 images a second for 35 s: lines at 1, 11, 21 and 31 s
    clock.now = float(second)
    shown.advance(2)
    shown.advance(0)  # advancing again within the interval writes nothing
  clock.now = 35.0
  shown.close()
  shown.close()  # a second close writes nothing
  assert out.getvalue().splitlines() == [
    "job: 2/100 images (2%), 2.0 images/s, ETA 49s",  # the first rate and ETA at once
    "job: 22/100 images (22%), 2.0 images/s, ETA 39s",
    "job: 42/100 images (42%), 2.0 images/s, ETA 29s",
    "job: 62/100 images (62%), 2.0 images/s, ETA 19s",
    "job: 70/100 images (70%), 2.0 images/s, stopped after 35s",
  ]


def test_a_log_gets_the_whole_total_once_in_the_final_line():
  clock, out = FakeClock(), io.StringIO()
  with Progress(
    2, "estimators", display=Display(stream=out, interval_s=10, redraw=False, clock=clock)
  ) as shown:
    clock.now = 30.0
    shown.advance()
    clock.now = 60.0
    shown.advance()  # all done: no running line, the final one follows
  assert out.getvalue().splitlines() == [
    "1/2 estimators (50%), 30.0s/estimator, ETA 30s",
    "2/2 estimators (100%), 30.0s/estimator, took 1m00s",
  ]


def test_a_finished_job_ends_with_its_total_even_when_it_took_less_than_an_interval():
  clock, out = FakeClock(100.0), io.StringIO()
  with Progress(5, "captions", display=Display(stream=out, redraw=False, clock=clock)) as shown:
    for _ in range(5):
      clock.now += 0.5
      shown.advance()
  assert out.getvalue().splitlines() == [
    "1/5 captions (20%), 2.0 captions/s, ETA 2s",
    "5/5 captions (100%), 2.0 captions/s, took 2s",
  ]


def test_an_error_in_the_block_still_writes_how_far_the_job_got():
  clock, out = FakeClock(), io.StringIO()
  with pytest.raises(RuntimeError):
    with Progress(4, "shards", display=Display(stream=out, redraw=False, clock=clock)) as shown:
      clock.now = 3.0
      shown.advance()
      raise RuntimeError("disk full")
  assert out.getvalue().splitlines() == [
    "1/4 shards (25%), 3.0s/shard, ETA 9s",
    "1/4 shards (25%), 3.0s/shard, stopped after 3s",
  ]


def test_a_terminal_gets_one_line_redrawn_in_place():
  clock, out, logged = FakeClock(), io.StringIO(), []
  shown = Progress(
    100, "images", label="job", display=Display(stream=out, redraw=True, clock=clock)
  )
  first = "job: 0/100 images (0%)"  # the total at once
  assert out.getvalue() == "\r" + first
  clock.now = 0.1
  shown.advance(1)  # the first rate and ETA: drawn at once
  rate = "job: 1/100 images (1%), 10.0 images/s, ETA 10s"
  assert out.getvalue() == "\r" + first + "\r" + rate
  clock.now = 0.2
  shown.advance(4)  # within 0.2 s of the last draw: not redrawn
  assert out.getvalue() == "\r" + first + "\r" + rate
  clock.now = 1.0
  shown.advance(5)
  second = "job: 10/100 images (10%), 10.0 images/s, ETA 9s"
  assert out.getvalue() == "\r" + first + "\r" + rate + "\r" + second
  log = shown.wrap_log(logged.append)
  out.seek(0), out.truncate()
  clock.now = 2.0
  log("shard 1/4 written")  # the line is erased, the message logged, the line drawn again
  third = "job: 10/100 images (10%), 5.0 images/s, ETA 18s"
  assert logged == ["shard 1/4 written"]
  assert out.getvalue() == "\r" + " " * len(second) + "\r" + "\r" + third
  out.seek(0), out.truncate()
  clock.now = 4.0
  shown.close()
  final = "job: 10/100 images (10%), 2.5 images/s, stopped after 4s"
  assert len(final) > len(third)
  assert out.getvalue() == "\r" + final + "\n"  # the line ends: what follows starts afresh
  log("after")  # once closed, the wrapped log is the log
  assert logged[-1] == "after" and out.getvalue().endswith("\n")


def test_a_shorter_redrawn_line_blanks_the_rest_of_the_longer_one():
  clock, out = FakeClock(), io.StringIO()
  shown = Progress(100, "items", display=Display(stream=out, redraw=True, clock=clock))
  clock.now = 1.0
  shown.advance(1)
  clock.now = 2.0
  shown.advance(8)
  longer = "1/100 items (1%), 1.0 items/s, ETA 1m39s"
  shorter = "9/100 items (9%), 4.5 items/s, ETA 20s"
  assert len(longer) - len(shorter) == 2
  assert out.getvalue().split("\r")[2:] == [longer, shorter + "  "]
  assert fit_width("x" * 100, 40) == "x" * 39  # cut to the terminal: a line never wraps
  shown.close()


def test_a_log_or_a_silenced_job_gets_log_itself_back():
  out = io.StringIO()
  in_log = Progress(10, "items", display=Display(stream=out, redraw=False))
  assert in_log.wrap_log(print) is print
  off = Progress(10, "items", enabled=False, display=Display(stream=out, redraw=True))
  assert off.wrap_log(print) is print
  assert out.getvalue() == ""


@pytest.mark.parametrize(
  "kwargs",
  [
    {"total": 10, "enabled": False},  # switched off (e.g. not process 0)
    {"total": 0},  # nothing to do
    {"total": 10, "min_total": 1000},  # too small to watch
  ],
)
@pytest.mark.parametrize("redraw", [False, True])
def test_a_silenced_progress_writes_nothing(kwargs, redraw):
  clock, out = FakeClock(), io.StringIO()
  with Progress(
    unit="items", **kwargs, display=Display(stream=out, redraw=redraw, clock=clock)
  ) as shown:
    clock.now = 60.0
    shown.advance(10)
  assert out.getvalue() == ""


def test_it_writes_to_stderr_never_to_stdout(capsys):
  with Progress(3, "items", label="job") as shown:
    shown.advance(3)
  out, err = capsys.readouterr()
  assert out == ""
  assert err.startswith("job: 3/3 items (100%)") and err.endswith("\n")


def test_a_broken_stream_silences_the_progress_not_the_job():
  class Broken(io.StringIO):
    def write(self, text):
      raise BrokenPipeError("stderr closed")

  clock = FakeClock()
  with Progress(3, "items", display=Display(stream=Broken(), redraw=True, clock=clock)) as shown:
    clock.now = 5.0
    shown.advance(3)
    shown.wrap_log(lambda message: None)("still logged")
  assert shown.enabled is False


def test_the_rate_leaves_out_paused_time_excluded_time_and_earlier_items():
  """A resumed job (40 of 100 done before) that works 2 s a step, pauses 30 s (a
  validation, one item done in it) and compiles 4 s: the rate is 2 s a step throughout."""
  clock, out = FakeClock(), io.StringIO()
  shown = Progress(
    100, "steps", label="train", initial=40, display=Display(stream=out, redraw=False, clock=clock)
  )
  clock.now = 6.0
  shown.exclude(4.0)  # 4 s of the first 6 compiled
  shown.advance()
  assert out.getvalue().splitlines() == ["train: 41/100 steps (41%), 2.0s/step, ETA 1m58s"]
  with shown.paused():
    clock.now = 20.0
    with shown.paused():  # nested: counted once
      shown.advance()  # done, but not counted in the rate
    clock.now = 36.0
  for _ in range(8):
    clock.now += 2.0
    shown.advance()
  assert (shown.done, shown.counted, shown.working_seconds(clock.now)) == (50, 9, 18.0)
  assert shown.line(clock.now) == "train: 50/100 steps (50%), 2.0s/step, ETA 1m40s"
  shown.close()
  assert out.getvalue().splitlines()[-1] == (
    "train: 50/100 steps (50%), 2.0s/step, stopped after 52s (18s of it on the steps)"
  )


def test_update_sets_the_items_done_and_never_goes_back():
  clock, out = FakeClock(), io.StringIO()
  shown = Progress(10, "images", display=Display(stream=out, redraw=False, clock=clock))
  clock.now = 2.0
  shown.update(4)
  shown.update(3)
  assert shown.done == 4 and out.getvalue() == "4/10 images (40%), 2.0 images/s, ETA 3s\n"


def test_a_second_line_takes_the_place_of_the_first_until_it_is_closed():
  clock, out = FakeClock(), io.StringIO()
  outer = Progress(
    10, "steps", label="train", display=Display(stream=out, redraw=True, clock=clock)
  )
  first = "train: 0/10 steps (0%)"
  inner = Progress(
    4, "pairs", label="scoring val", display=Display(stream=out, redraw=True, clock=clock)
  )
  assert (
    out.getvalue()
    == "\r" + first + "\r" + " " * len(first) + "\r" + "\rscoring val: 0/4 pairs (0%)"
  )
  out.seek(0), out.truncate()
  clock.now = 1.0
  outer.advance()  # its place is taken: not drawn
  assert out.getvalue() == ""
  inner.advance(4)
  out.seek(0), out.truncate()
  inner.close()  # ends with a newline, the first line comes back below it
  assert out.getvalue() == (
    "\rscoring val: 4/4 pairs (100%), 4.0 pairs/s, took 1s"
    + "\n"
    + "\rtrain: 1/10 steps (10%), 1.0 steps/s, ETA 9s"
  )
  outer.close()


def test_say_and_log_records_go_above_the_line(capsys):
  import logging

  clock, out = FakeClock(), io.StringIO()
  handler = logging.StreamHandler(out)
  logger = logging.getLogger("jitr-test-progress")
  logger.addHandler(handler)
  logger.propagate = False
  try:
    with Progress(10, "steps", display=Display(stream=out, redraw=True, clock=clock)) as shown:
      progress.keep_line_below_logs(logger)
      progress.keep_line_below_logs(logger)  # once
      line = shown.line(0.0)
      progress.say("loading data", stream=out)
      logger.warning("a log line")
      progress.say("not shown", enabled=False, stream=out)
      assert out.getvalue().split("\n") == [
        "\r" + line + "\r" + " " * len(line) + "\r" + "loading data",
        "\r" + line + "\r" + " " * len(line) + "\r" + "a log line",
        "\r" + line,
      ]
  finally:
    logger.removeHandler(handler)
  progress.say("without a line")
  assert capsys.readouterr().err == "without a line\n"


# --- the jobs that draw it ----------------------------------------------------------------


def _small_caps(path: Path) -> Path:
  from tests.relevance.conftest import SMALL_CAPTIONS  # 5 images x 5 captions

  path.write_text("\n".join(SMALL_CAPTIONS) + "\n", encoding="utf-8")
  return path


def test_each_precompute_worker_shows_its_own_share(tmp_path, capsys):
  from jitr.relevance.captions_io import read_precomp_captions
  from jitr.relevance.cider_estimator import CiderEstimator
  from jitr.relevance.records import RecordsWriting, write_relevance_records

  captions = read_precomp_captions(str(_small_caps(tmp_path / "caps.txt")))
  out = str(tmp_path / "rel")

  def progress_lines(**kwargs) -> list[str]:
    write_relevance_records(
      out,
      captions,
      CiderEstimator(),
      writing=RecordsWriting(images_per_shard=1, log=lambda _: None, **kwargs),
    )
    written = capsys.readouterr()
    assert written.out == ""
    return [line for line in written.err.splitlines() if line.startswith("cider relevance")]

  first = progress_lines(num_workers=2, worker_index=0, progress=True)  # shards 0, 2, 4
  assert first[-1].startswith("cider relevance, worker 0 of 2: 3/3 images (100%), ")
  # a later run counts only the images still to write (shards 1 and 3), not the skipped ones
  rest = progress_lines(progress=True)
  assert rest[-1].startswith("cider relevance: 2/2 images (100%), ")
  assert progress_lines(progress=True) == []  # every shard complete: nothing to show
  assert progress_lines(num_workers=2, worker_index=1, progress=False) == []


def test_agreement_counts_the_estimators_scored(tmp_path, capsys):
  from jitr.relevance.agreement import build_protocol, read_judgments, score_protocol
  from jitr.relevance.captions_io import read_flickr8k_tokens

  (tmp_path / "tokens.txt").write_text(
    "a.jpg#0\tA dog runs on grass .\na.jpg#1\tA brown dog outside .\n"
    "b.jpg#0\tA man rides a bike .\nb.jpg#1\tA cyclist on a road .\n"
  )
  (tmp_path / "CrowdFlowerAnnotations.txt").write_text(
    "a.jpg\tb.jpg#0\t0\t0\t3\nb.jpg\ta.jpg#1\t0.333333\t1\t2\n"
  )
  captions = read_flickr8k_tokens(str(tmp_path / "tokens.txt"))
  protocol = build_protocol(read_judgments(str(tmp_path / "CrowdFlowerAnnotations.txt")), captions)
  logged = []
  score_protocol(protocol, captions, ["cider"], log=logged.append, progress=True)
  out, err = capsys.readouterr()
  assert out == "" and err.startswith("agreement: 1/1 estimators (100%), ")
  assert logged == ["scoring 2 pairs with cider"]
  score_protocol(protocol, captions, ["cider"], log=logged.append)
  assert capsys.readouterr().err == ""  # off unless asked


def _dot_model(width: int = 4):
  """A duck-typed embedding model for SplitScorer: images the mean of their regions' first
  ``width`` features, captions their first ``width`` tokens."""
  import jax.numpy as jnp

  return types.SimpleNamespace(
    pairwise=False,
    encode_images=lambda variables, images, mask: jnp.mean(images, axis=1)[:, :width],
    encode_captions=lambda variables, tokens, lengths: tokens[:, :width].astype(jnp.float32),
    score=None,
  )


def _split(n_img: int = 7, per_image: int = 3):
  from jitr.data import pairs

  rng = np.random.default_rng(0)
  n_cap = n_img * per_image
  return pairs.RetrievalSplit(
    images=rng.normal(size=(n_img, 2, 4)).astype(np.float32),
    tokens=rng.integers(1, 9, (n_cap, 4)).astype(np.int32),
    lengths=np.full(n_cap, 4, np.int32),
    caption_image=np.repeat(np.arange(n_img), per_image),
    image_mask=None,
  )


def test_scoring_a_split_counts_every_pair_once(capsys, monkeypatch):
  """Overlapping last blocks (7 images in blocks of 3, 21 captions in blocks of 4) count
  only their new pairs: the line ends at 147/147; only process 0 draws it."""
  import jax

  from jitr.experiment.evaluator import Evaluator
  from jitr.training import score_split

  split = _split()
  evaluator = Evaluator(_dot_model(), {"test": split}, None, None, batch_size=3)
  evaluator.scorer.caption_batch = 4
  monkeypatch.setattr(score_split, "MIN_PAIRS_SHOWN", 1)
  quiet = evaluator.similarity("test", {})  # show_progress is off by default
  assert capsys.readouterr().err == ""
  evaluator.scorer.show_progress = True
  sim = evaluator.similarity("test", {})
  out, err = capsys.readouterr()
  first, last = err.splitlines()  # after the first block, and the final line
  assert out == "" and first.startswith("scoring test: 12/147 pairs (8%), ")
  assert last.startswith("scoring test: 147/147 pairs (100%), ")
  want = split.images.mean(axis=1) @ split.tokens.astype(np.float32).T
  np.testing.assert_allclose(sim, want, rtol=1e-5)
  np.testing.assert_array_equal(sim, quiet)
  monkeypatch.setattr(jax, "process_index", lambda: 1)
  evaluator.similarity("test", {})
  assert capsys.readouterr().err == ""  # every process but the first is silent
  monkeypatch.undo()
  evaluator.similarity("test", {})
  assert capsys.readouterr().err == ""  # a split below MIN_PAIRS_SHOWN is not shown


def test_the_model_library_bars_are_off_while_loading_and_restored_after():
  pytest.importorskip("transformers")
  from transformers.utils import logging as transformers_logging

  from jitr.relevance.sentence import library_progress_bars

  before = transformers_logging.is_progress_bar_enabled()
  for show in (False, True):
    with library_progress_bars(show):
      assert transformers_logging.is_progress_bar_enabled() is show
    assert transformers_logging.is_progress_bar_enabled() is before


def test_a_shard_moves_the_line_per_piece_of_the_estimators_work(tmp_path):
  """CIDEr-D's top-K of 5 images in blocks of 2 reports 2, 4, 5 of 5; a shard of 5 images
  that started at 3 images done moves the line to 5, 7 and 8."""
  from jitr.relevance.captions_io import read_precomp_captions
  from jitr.relevance.cider_estimator import CiderEstimator
  from jitr.relevance.records import shard_share

  captions = read_precomp_captions(str(_small_caps(tmp_path / "caps.txt")))
  estimator = CiderEstimator().fit(captions)
  reports = []
  with estimator.reporting_to(lambda done, total: reports.append((done, total))):
    estimator.top_k(np.arange(5), 3, images_per_block=2)
  assert reports == [(2, 5), (4, 5), (5, 5)]
  estimator.top_k(np.arange(5), 3, images_per_block=2)  # outside the block: not reported
  assert len(reports) == 3
  shown = Progress(10, "images", initial=3, display=Display(stream=io.StringIO(), redraw=False))
  report = shard_share(shown, 3, 5)
  moved = []
  for done, total in reports:
    report(done, total)
    moved.append(shown.done)
  assert moved == [5, 7, 8]


def test_each_forward_pass_of_a_torch_model_is_counted_and_its_output_unchanged():
  torch = pytest.importorskip("torch")
  from jitr.relevance.sentence import counting_batches

  class Encoder(torch.nn.Module):
    def forward(self, features):
      return {"sentence_embedding": features["input_ids"].float() * 2}

  model, counted = Encoder(), []
  batches = [torch.arange(6).reshape(3, 2), torch.arange(4).reshape(2, 2)]
  with counting_batches(model, counted.append):
    outputs = [model({"input_ids": ids})["sentence_embedding"] for ids in batches]
  model({"input_ids": batches[0]})  # the hook is gone after the block
  assert counted == [3, 5]
  assert [o.tolist() for o in outputs] == [[[0, 2], [4, 6], [8, 10]], [[0, 2], [4, 6]]]
  with counting_batches(object(), counted.append):  # not a torch module: nothing counted
    pass
  assert counted == [3, 5]


def test_compile_seconds_count_this_threads_compiles_only_once_each():
  import threading

  import jax
  import jax.numpy as jnp

  from jitr.training.train_progress import CompileSeconds

  @jax.jit
  def f(x):
    return jnp.sin(x) * 3.0 + 1.0

  with CompileSeconds() as compiles:
    f(jnp.ones(7))
    first = compiles.take()
    f(jnp.ones(7))  # compiled: nothing more
    again = compiles.take()
    other = threading.Thread(target=lambda: jax.jit(lambda x: x - 2.0)(jnp.ones(5)))
    other.start(), other.join()
    elsewhere = compiles.take()
  assert first > 0 and again == 0 and elsewhere == 0
  f(jnp.ones(9))  # after the block the listener is gone
  assert compiles.take() == 0


def test_the_logged_steps_per_second_run_on_the_work_clock():
  from jitr.training.progress_report import ProgressReport

  class Recorder:
    def __init__(self):
      self.rates = []

    def write_scalars(self, step, scalars):
      self.rates.append((step, round(scalars["steps_per_sec"], 6)))

  work = FakeClock()
  writer = Recorder()
  report = ProgressReport(total_steps=100, every_steps=10, writer=writer, work_clock=work)
  report(0, now=0.0)
  work.now = 5.0  # 10 steps in 5 s of training, then 60 s of validation (not on the clock)
  report(10, now=65.0)
  work.now = 10.0
  report(20, now=70.0)
  assert writer.rates == [(10, 2.0), (20, 2.0)]
  timed = ProgressReport(total_steps=100, every_steps=10, writer=Recorder())
  timed(0, now=0.0)
  with timed.timed("eval"):
    pass
  timed.time_per_part["eval"] = 60.0  # a validation of 60 s between two reports
  timed(10, now=65.0)
  assert timed.writer.rates == [(10, 2.0)]  # without a work clock, timed sections left out


def test_train_progress_says_what_the_run_does_and_counts_only_this_runs_steps():
  from jitr.training.train_progress import TrainProgress

  out = io.StringIO()
  lines = TrainProgress(total_steps=10, stream=out, redraw=False, phases=True)
  lines.phase("compiling the train step")
  lines.resumed(4)
  lines.start(4)
  lines.line.clock = clock = FakeClock(lines.line.start)
  with lines.paused():
    clock.now += 100.0  # a validation
  clock.now += 2.0
  lines.on_step(5, {"loss": np.float32(1.0)})
  assert lines.working_seconds() == pytest.approx(2.0, abs=0.5)  # less any compile time
  lines.close()
  text = out.getvalue().splitlines()
  assert text[:2] == ["compiling the train step", "resumed from step 4"]
  assert text[2].startswith("train: 5/10 steps (50%), ") and " ETA " in text[2]
  assert text[-1].startswith("train: 5/10 steps (50%), ") and "stopped after 1m42s" in text[-1]
  silent = io.StringIO()
  quiet = TrainProgress(total_steps=10, stream=silent, enabled=False)
  quiet.phase("x"), quiet.start(0), quiet.on_step(1, {}), quiet.close()
  assert silent.getvalue() == ""
  log = io.StringIO()  # not a terminal: the phases are left to it, the resume is said
  logged = TrainProgress(total_steps=10, stream=log, redraw=False)
  logged.phase("compiling the train step"), logged.resumed(4)
  assert log.getvalue() == "resumed from step 4\n"


def test_steps_say_each_name_and_count_the_one_before():
  clock, out = FakeClock(), io.StringIO()
  with Steps(("reading", "checking", "writing"), label="import", stream=out, redraw=False,
             clock=clock, say_names=True) as steps:  # fmt: skip
    steps.begin("reading")
    clock.now = 4.0
    steps.begin("checking")
    with pytest.raises(ValueError, match="'reading' begun out of order \\(expected 'writing'\\)"):
      steps.begin("reading")
    clock.now = 6.0
    steps.begin("writing")
    clock.now = 9.0
  assert out.getvalue().splitlines() == [
    "reading",
    "import: 1/3 steps (33%), 4.0s/step, ETA 8s",
    "checking",
    "writing",
    "import: 3/3 steps (100%), 3.0s/step, took 9s",
  ]
  failed = io.StringIO()
  with pytest.raises(OSError):
    with Steps(("reading", "writing"), label="import", stream=failed, redraw=False,
               say_names=True) as steps:  # fmt: skip
      steps.begin("reading")
      raise OSError("no such file")
  assert failed.getvalue().splitlines()[0] == "reading"
  assert failed.getvalue().splitlines()[-1].startswith("import: 0/2 steps (0%), stopped after ")
