"""Input faults of the relevance records and the relevance apps' files, each one clear
``ValueError`` naming the file (and line) or the argument: a records header that is JSON but
not an object, a ``relevance.scale`` that is not a finite number > 0, an empty estimator list,
a NUL character in a caption file, a judgments file that is not UTF-8 or holds a NUL."""

import json
import math

import jax.numpy as jnp
import pytest

from jitr import losses
from jitr.data import precomp
from jitr.data.relevance_reader import RelevanceRecordsError, load_header, load_relevance_table
from jitr.relevance import agreement, calibration_fit
from jitr.relevance.agreement_report import agreement_report
from jitr.relevance.captions_io import CaptionFileError, read_flickr8k_tokens, read_precomp_captions
from jitr.relevance.cider_estimator import CiderEstimator
from jitr.relevance.records import RecordsWriting, write_relevance_records

DAMAGED = "(a damaged header: delete the folder and re-run jitr-precompute)"


@pytest.fixture()
def records(small_caps_file, tmp_path):
  """A records folder of CIDEr-D top-3 lists of the 5 small images; its header path."""
  out = tmp_path / "rel"
  captions = read_precomp_captions(str(small_caps_file))
  write_relevance_records(
    str(out), captions, CiderEstimator(), writing=RecordsWriting(top_k=3, log=lambda _: None)
  )
  return out, out / "relevance.json"


@pytest.mark.parametrize(
  ("value", "kind"),
  [([1, 2], "an array"), ("header", "a string"), (3, "a number"), (None, "null")],
)
def test_a_header_that_is_json_but_not_an_object_names_the_file(records, value, kind):
  folder, header = records
  header.write_text(json.dumps(value))
  for read in (load_header, load_relevance_table):
    with pytest.raises(RelevanceRecordsError) as err:
      read(str(folder))
    assert str(err.value) == f"{header}: the header is {kind}, expected a JSON object {DAMAGED}"


@pytest.mark.parametrize("scale", [0, -10.0, math.nan, math.inf, "ten", None, True])
def test_a_relevance_scale_that_is_no_finite_number_above_0_is_refused(records, scale):
  folder, header = records
  data = json.loads(header.read_text())
  assert data["relevance"]["scale"] == 10.0
  data["relevance"]["scale"] = scale
  header.write_text(json.dumps(data))
  with pytest.raises(RelevanceRecordsError) as err:
    load_relevance_table(str(folder))
  assert str(err.value) == (
    f"{header}: field 'relevance.scale' is {scale!r}, expected a finite number > 0 {DAMAGED}"
  )


@pytest.mark.parametrize("scale", [0.0, -1.0, math.nan])
def test_relevance_from_topk_refuses_a_scale_that_is_no_finite_number_above_0(scale):
  args = (jnp.array([[1, 0]]), jnp.array([[5.0, 2.0]]), jnp.array([0, 1]))
  with pytest.raises(ValueError) as err:
    losses.relevance_from_topk(*args, scale=scale)
  assert str(err.value) == f"scale: expected a finite number > 0, got {scale!r}"
  assert losses.relevance_from_topk(*args, scale=10.0).tolist() == [[0.20000000298023224, 0.5]]


def test_an_empty_estimator_list_is_refused_before_the_files_are_read(tmp_path):
  expected = "estimators: expected one or more of ['cider', 'lsa', 'sentence', 'tokens'], got none"
  missing = str(tmp_path / "none.txt")
  with pytest.raises(ValueError) as err:
    agreement_report(missing, missing, estimators=[], log=lambda _: None)
  assert str(err.value) == expected
  with pytest.raises(ValueError) as err:
    calibration_fit.fit_calibration_tables(missing, missing, [], output_dir=str(tmp_path / "t"))
  assert str(err.value) == expected
  assert not (tmp_path / "t").exists()
  with pytest.raises(ValueError, match=r"^unknown estimator 'bm25' \(expected one of"):
    agreement_report(missing, missing, estimators=["cider", "bm25"], log=lambda _: None)


NUL_LINE = "line 2 holds a NUL character (byte 0x00 at column 8); expected UTF-8 text"


def test_a_nul_character_in_a_caption_file_names_the_file_and_line(tmp_path):
  caps = tmp_path / "test_caps.txt"
  caps.write_bytes(b"a dog runs\na cat s\0its\na ball\na mat\na dog sits\n")
  with pytest.raises(CaptionFileError) as err:
    read_precomp_captions(str(caps))
  assert str(err.value) == f"{caps}:2: {NUL_LINE}"
  with pytest.raises(precomp.PrecompError) as err:  # the training captions
    precomp.read_captions(str(caps))
  assert str(err.value) == f"{caps}:2: {NUL_LINE}"
  tokens = tmp_path / "Flickr8k.token.txt"
  tokens.write_bytes(b"a.jpg#0\tA dog .\na.jpg#1\tA c\0at .\n")
  with pytest.raises(CaptionFileError) as err:
    read_flickr8k_tokens(str(tokens))
  assert str(err.value) == (
    f"{tokens}:2: line 2 holds a NUL character (byte 0x00 at column 12); expected UTF-8 text"
  )


@pytest.mark.parametrize(
  ("bad", "problem"),
  [
    (b"\xe9", "is not UTF-8 (byte 0xe9 at column 13)"),
    (b"\0", "holds a NUL character (byte 0x00 at column 13)"),
  ],
)
def test_a_judgments_file_that_is_not_text_names_the_file_and_line(tmp_path, bad, problem):
  path = tmp_path / "CrowdFlowerAnnotations.txt"
  path.write_bytes(b"a.jpg\ta.jpg#0\t1\t3\t0\na.jpg\tb.jpg#" + bad + b"1\t0\t0\t3\n")
  with pytest.raises(agreement.JudgmentsFileError) as err:
    agreement.read_judgments(str(path))
  assert str(err.value) == f"{path}:2: line 2 {problem}; expected UTF-8 text"


def test_judgments_with_crlf_line_ends_read_as_before(tmp_path):
  path = tmp_path / "CrowdFlowerAnnotations.txt"
  path.write_bytes(b"a.jpg\ta.jpg#0\t1\t3\t0\r\n\r\nb.jpg\ta.jpg#1\t0.5\t1\t2\r\n")
  judged = agreement.read_judgments(str(path))
  assert judged.caption_ids == ("a.jpg#0", "a.jpg#1") and judged.scores.tolist() == [1.0, 0.5]
