"""The official VSE∞ training augmentation: captions and region sets equal a transcription of
the official code (woodfrog/vse_infty @ 29df9d65, ``lib/datasets/image_caption.py``) fed
the same draws, the augmentation rates, evaluation leaving captions alone."""

from __future__ import annotations

import numpy as np
import pytest

from jitr.data.caption_augment import augment_caption, drop_regions
from jitr.data.wordpiece import WordPiece
from tests.data import wordpiece_cases as cases

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
TINY = [*SPECIALS, "a", "dog", "##s", "run", "##ning", "un", "##aff", "##able"]
PAD, UNK, CLS, SEP, MASK, A, DOG, S, RUN, NING, UN, AFF, ABLE = range(len(TINY))


class Replay:
  """One shared sequence of uniform draws in [0, 1), served as ``numpy.random.Generator``'s
  ``random()`` / ``random(n)`` / ``integers(n)`` and as Python ``random``'s ``random()`` /
  ``choice(seq)``: each call takes the next value(s), so two consumers in the same order
  see the same draws."""

  def __init__(self, values):
    self.values = list(values)
    self.used = 0
    self.word_draws = []  # the values of the scalar random() calls

  def _next(self) -> float:
    value = self.values[self.used]
    self.used += 1
    return value

  def random(self, size=None):
    if size is None:
      self.word_draws.append(self._next())
      return self.word_draws[-1]
    return np.asarray([self._next() for _ in range(size)])

  def integers(self, high):
    return int(self._next() * high)

  def choice(self, seq):
    return seq[self.integers(len(seq))]


def official_process_caption(tokenizer, tokens, random, train=True):
  """``process_caption`` of the official code, line for line: ``random`` is a parameter
  (the official's module ``random``) and the result a list (not ``torch.Tensor``)."""
  output_tokens = []
  deleted_idx = []

  for i, token in enumerate(tokens):  # noqa: B007 (the official's lines)
    sub_tokens = tokenizer.wordpiece_tokenizer.tokenize(token)
    prob = random.random()

    if prob < 0.20 and train:  # mask/remove the tokens only during training
      prob /= 0.20

      # 50% randomly change token to mask token
      if prob < 0.5:
        for sub_token in sub_tokens:  # noqa: B007
          output_tokens.append("[MASK]")
      # 10% randomly change token to random token
      elif prob < 0.6:
        for sub_token in sub_tokens:  # noqa: B007
          output_tokens.append(random.choice(list(tokenizer.vocab.keys())))
          # -> rest 10% randomly keep current token
      else:
        for sub_token in sub_tokens:
          output_tokens.append(sub_token)
          deleted_idx.append(len(output_tokens) - 1)
    else:
      for sub_token in sub_tokens:
        # no masking token (will be ignored by loss function later)
        output_tokens.append(sub_token)

  if len(deleted_idx) != 0:
    output_tokens = [output_tokens[i] for i in range(len(output_tokens)) if i not in deleted_idx]

  output_tokens = ["[CLS]"] + output_tokens + ["[SEP]"]
  target = tokenizer.convert_tokens_to_ids(output_tokens)
  return target


def official_drop_regions(image, np_random_rand):
  """``PrecompRegionDataset.__getitem__``'s training branch, ``np.random.rand`` a parameter."""
  num_features = image.shape[0]
  rand_list = np_random_rand(num_features)
  image = image[np.where(rand_list > 0.20)]
  return image


@pytest.fixture(scope="module")
def tiny() -> WordPiece:
  return WordPiece.from_tokens(TINY)


# ----------------------------------------------------------------------------- captions


def test_each_branch_by_hand(tiny):
  words = [[A], [DOG, S], [RUN, NING], [UN, AFF, ABLE], [DOG]]
  # a: 0.05 -> 0.25 masked; dogs: 0.5 kept; running: 0.11 -> 0.55 replaced, one draw per
  # piece (0.0 -> id 0, 0.999 -> the last id); unaffable: 0.15 -> 0.75 deleted; dog: 0.2 kept.
  draws = Replay([0.05, 0.5, 0.11, 0.0, 0.999, 0.15, 0.2])
  ids = augment_caption(words, draws, tiny)
  assert ids.dtype == np.int32
  assert ids.tolist() == [CLS, MASK, DOG, S, PAD, len(TINY) - 1, DOG, SEP]
  assert draws.used == 7


def test_every_word_may_be_deleted(tiny):
  assert augment_caption([[A], [DOG, S]], Replay([0.19, 0.13]), tiny).tolist() == [CLS, SEP]


def test_evaluation_leaves_the_caption_unchanged_and_draws_nothing(tiny):
  words = [[A], [DOG, S], [UN, AFF, ABLE]]
  ids = augment_caption(words, Replay([]), tiny, train=False)
  assert ids.tolist() == [CLS, A, DOG, S, UN, AFF, ABLE, SEP]


def test_evaluation_equals_encode_on_bert_captions():
  bert = WordPiece.from_vocab_file(cases.minilm_vocab())
  for caption in cases.PLAIN_CAPTIONS + cases.HARD_CASES:
    ids = augment_caption(bert.word_ids(caption), Replay([]), bert, train=False)
    assert ids.tolist() == bert.encode(caption).tolist()


def test_probability_outside_0_1_is_one_line(tiny):
  with pytest.raises(
    ValueError, match=r"^augment_caption: probability is 1\.5; expected 0 <= p <= 1$"
  ):
    augment_caption([[A]], Replay([0.0]), tiny, probability=1.5)


def test_equals_the_official_process_caption_on_the_same_draws():
  """Every caption x 60 seeds: the official words (``basic_tokenizer.tokenize``) through the
  official ``process_caption``, and :meth:`WordPiece.word_ids` through
  :func:`augment_caption`, each fed the seed's sequence of draws from the start; every
  branch is taken hundreds of times."""
  vocab = cases.minilm_vocab()
  legacy = cases.legacy_bert(vocab)
  bert = WordPiece.from_vocab_file(vocab)
  captions = cases.PLAIN_CAPTIONS + cases.HARD_CASES
  official_words = [legacy.basic_tokenizer.tokenize(caption) for caption in captions]
  word_ids = [bert.word_ids(caption) for caption in captions]
  word_draws = []
  for seed in range(60):
    values = np.random.default_rng(seed).random(400)
    for k, caption in enumerate(captions):
      official = Replay(values)
      expected = official_process_caption(legacy, official_words[k], official)
      ours = Replay(values)
      assert augment_caption(word_ids[k], ours, bert).tolist() == expected, (seed, caption)
      assert ours.used == official.used
      word_draws.extend(ours.word_draws)
  chosen = np.asarray(word_draws)
  chosen = chosen[chosen < 0.2] / 0.2
  branches = [(chosen < 0.5).sum(), ((chosen >= 0.5) & (chosen < 0.6)).sum(), (chosen >= 0.6).sum()]
  assert min(branches) > 200, branches  # masked, replaced, deleted words


def test_rates_match_0_2_times_half_a_tenth_and_four_tenths(tiny):
  """200,000 one-piece words ``a``: the fractions masked, replaced and deleted lie within 5
  standard errors of 0.10, 0.02 and 0.08 (a replacement that draws ``a`` or ``[MASK]``,
  2 ids in 13, counts as kept or masked: the expected fractions allow for it)."""
  rng = np.random.default_rng(0)
  captions, words = 20_000, 10
  masked = replaced = kept = 0
  for _ in range(captions):
    ids = augment_caption([[A]] * words, rng, tiny)[1:-1]
    masked += int((ids == MASK).sum())
    kept += int((ids == A).sum())
    replaced += int(((ids != MASK) & (ids != A)).sum())
  n = captions * words
  deleted = n - masked - replaced - kept
  share = 1 / len(TINY)  # a replacement drawing one given id
  expected = {
    "masked": 0.2 * 0.5 + 0.2 * 0.1 * share,
    "replaced": 0.2 * 0.1 * (1 - 2 * share),
    "deleted": 0.2 * 0.4,
  }
  for name, count in (("masked", masked), ("replaced", replaced), ("deleted", deleted)):
    p = expected[name]
    assert abs(count / n - p) < 5 * np.sqrt(p * (1 - p) / n), (name, count / n, p)


# ----------------------------------------------------------------------------- regions


def test_drop_regions_equals_the_official_rule_on_fixed_draws():
  regions = np.arange(12, dtype=np.float32).reshape(6, 2)
  draws = [0.1, 0.2, 0.2000001, 0.9, 0.0, 0.5]
  kept = drop_regions(regions, Replay(draws), keep_above=0.2)
  assert kept.tolist() == [[4, 5], [6, 7], [10, 11]]  # draws above 0.2, in order
  official = official_drop_regions(regions, Replay(draws).random)
  assert np.array_equal(kept, official)


def test_drop_regions_equals_the_official_rule_on_many_seeds():
  regions = np.random.default_rng(1).normal(size=(36, 8)).astype(np.float32)
  for seed in range(200):
    values = np.random.default_rng(seed).random(36)
    kept = drop_regions(regions, Replay(values))
    assert np.array_equal(kept, official_drop_regions(regions, Replay(values).random))


def test_drop_regions_may_keep_none_as_the_official():
  regions = np.ones((3, 4), dtype=np.float32)
  kept = drop_regions(regions, Replay([0.2, 0.1, 0.0]))
  assert kept.shape == (0, 4)


def test_drop_regions_keeps_four_fifths():
  rng = np.random.default_rng(0)
  regions = np.zeros((36, 1), dtype=np.float32)
  kept = sum(drop_regions(regions, rng).shape[0] for _ in range(5000))
  n = 36 * 5000
  assert abs(kept / n - 0.8) < 5 * np.sqrt(0.8 * 0.2 / n)


def test_drop_regions_wants_a_matrix():
  with pytest.raises(
    ValueError, match=r"^drop_regions: regions has shape \(3,\); expected \[R, D\]$"
  ):
    drop_regions(np.zeros(3), Replay([0.5] * 3))
