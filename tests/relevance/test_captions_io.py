"""Caption files: both formats, fingerprints, and one clear error per bad input."""

from __future__ import annotations

import numpy as np
import pytest

from jitr.relevance.captions_io import (
  CaptionFileError,
  detect_format,
  read_captions,
  read_flickr8k_tokens,
  read_precomp_captions,
)


def test_precomp(small_caps_file, small_captions):
  cs = read_precomp_captions(str(small_caps_file))
  assert (cs.num_images, cs.num_captions, cs.captions_per_image) == (5, 25, 5)
  assert cs.image_ids == ("0", "1", "2", "3", "4") and cs.caption_ids[7] == "7"
  assert cs.references(1) == small_captions[5:10]
  np.testing.assert_array_equal(cs.caption_image, np.repeat(np.arange(5), 5))
  assert detect_format(str(small_caps_file)) == "precomp"
  assert read_captions(str(small_caps_file)).fingerprint() == cs.fingerprint()


def test_fingerprint_changes_with_any_caption(small_caps_file, small_captions, tmp_path):
  other = tmp_path / "other_caps.txt"
  other.write_text("\n".join(small_captions[:-1] + ["Someone in red walking in snow ."]) + "\n")
  a, b = read_precomp_captions(str(small_caps_file)), read_precomp_captions(str(other))
  assert len(a.fingerprint()) == 64 and a.fingerprint() != b.fingerprint()


def test_length_not_a_multiple_of_five(small_captions, tmp_path):
  path = tmp_path / "bad_caps.txt"
  path.write_text("\n".join(small_captions[:23]) + "\n")
  with pytest.raises(
    CaptionFileError, match=r"bad_caps.txt: 23 caption lines is not a multiple of 5"
  ):
    read_precomp_captions(str(path))


def test_empty_caption(small_captions, tmp_path):
  lines = list(small_captions)
  lines[12] = "   "
  path = tmp_path / "empty_caps.txt"
  path.write_text("\n".join(lines) + "\n")
  with pytest.raises(CaptionFileError, match=r"empty_caps.txt:13: empty caption"):
    read_precomp_captions(str(path))


def test_flickr8k_format(tmp_path):
  path = tmp_path / "tokens.txt"
  path.write_text(
    "b.jpg#0\tA dog .\nb.jpg#1\tA cat .\nx.jpg.1#0\tStray caption .\n"
    "x.jpg#1\tSecond .\na.jpg#0\tThird .\n"
  )
  cs = read_flickr8k_tokens(str(path))
  assert cs.image_ids == ("b.jpg", "x.jpg", "a.jpg")
  assert cs.caption_ids == ("b.jpg#0", "b.jpg#1", "x.jpg.1#0", "x.jpg#1", "a.jpg#0")
  np.testing.assert_array_equal(cs.image_offsets, [0, 2, 4, 5])
  assert cs.captions_per_image is None and detect_format(str(path)) == "flickr8k"
  bad = tmp_path / "bad_tokens.txt"
  bad.write_text("b.jpg#0\tA dog .\nb.jpg#1\t \n")
  with pytest.raises(CaptionFileError, match=r"bad_tokens.txt:2: empty caption for b.jpg#1"):
    read_flickr8k_tokens(str(bad))
  bad.write_text("b.jpg#0 A dog .\n")
  with pytest.raises(CaptionFileError, match=r"bad_tokens.txt:1: expected 'IMAGE#N<TAB>caption'"):
    read_flickr8k_tokens(str(bad))


def test_real_flickr8k(flickr8k_captions):
  cs = flickr8k_captions
  # 8,091 images plus one whose five captions are split as X.jpg.1#0 + X.jpg#1-4 (folded)
  assert (cs.num_images, cs.num_captions, cs.captions_per_image) == (8092, 40460, 5)
  assert cs.caption_ids[0] == "1000268201_693b08cb0e.jpg#0"
