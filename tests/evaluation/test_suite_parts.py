"""The pieces evaluate_retrieval is made of: checks, planning, the typed sweep, folds."""

import ast
import pathlib

import numpy as np
import pytest

import jitr.evaluation
from jitr.evaluation import EvalOptions, coco_recalls, evaluate_retrieval, positives_from_lists
from jitr.evaluation.checks import check_ks, check_sizes
from jitr.evaluation.engine import SweepConfig, SweepData, SweepResult, sweep
from jitr.evaluation.folds import fold_groups
from jitr.evaluation.plan import map_config, plan_evaluation, sweep_config
from jitr.evaluation.positives import PositiveSets, positives_from_owner
from jitr.evaluation.sources import as_scores


def test_check_ks_sorts_deduplicates_and_names_the_argument():
  assert check_ks((10, 1, 5, 5)) == (1, 5, 10)
  for bad in ((), (0, 1), ("x",)):
    with pytest.raises(ValueError, match="`ndcg_ks` must be a non-empty list of integers >= 1"):
      check_ks(bad, "ndcg_ks")


def test_check_sizes_message():
  check_sizes("a", (2, 3), (2, 3), "b")
  with pytest.raises(ValueError, match=r"^`a` is 2 x 3, expected 3 x 2 like `b`$"):
    check_sizes("a", (2, 3), (3, 2), "b")


def test_sweep_returns_a_typed_result_with_hand_computed_values():
  # Image 0 owns captions 0, 1; image 1 owns captions 2, 3.
  sim = np.array([[0.1, 0.9, 0.5, 0.3], [0.8, 0.2, 0.4, 0.7]], np.float32)
  i2t, _ = positives_from_owner(np.array([0, 0, 1, 1]))
  ext = positives_from_lists([[2], [0, 3]], num_gallery=4)
  res = sweep(
    as_scores(sim),
    i2t,
    cfg=SweepConfig(num_extended=1, map_sets=(0,), topk=2),
    data=SweepData(extended=(ext,)),
  )
  assert isinstance(res, SweepResult)
  np.testing.assert_array_equal(res.rank, [0, 1])  # image 1: caption 0 (.8) above 3 (.7)
  np.testing.assert_array_equal(res.extended_rank[0], [1, 0])  # caption 2 second for image 0
  np.testing.assert_array_equal(res.extended_hits[0], [[False, True], [True, True]])
  assert res.group_rank is None and res.dcg is None and res.class_ap is None


def test_plan_normalises_cut_offs_and_shares_relevance_as_semantic():
  owner = np.repeat(np.arange(4), 2)
  rel = np.random.default_rng(0).uniform(size=(4, 8))
  ext = {"e": positives_from_owner(owner)}
  plan = plan_evaluation(
    np.zeros((4, 8)),
    caption_to_image=owner,
    relevance=rel,
    extended_positives=ext,
    options=EvalOptions(
      recall_ks=(5, 1, 1), curve_ks=(3,), ndcg_ks=(20, 2), semantic_ks=(1,), folds=2
    ),
  )
  assert plan.recall_ks == (1, 5) and plan.all_recall_ks == (1, 3, 5)
  assert plan.ndcg_ks == (2, 20) and plan.semantic is plan.relevance  # one block read
  assert plan.map_names == ("e",)
  cfg = sweep_config(plan, "t2i")
  assert (cfg.ndcg_k, cfg.topk, cfg.with_groups, cfg.num_extended) == (4, 4, True, 1)  # G = 4
  assert map_config(plan, "i2t") == SweepConfig(map_sets=(0,), topk=2, with_gt=False)
  np.testing.assert_array_equal(plan.folds["t2i"].group_of_query, [0, 0, 0, 0, 1, 1, 1, 1])


def test_fold_groups_by_hand():
  groups = fold_groups(np.array([1, 0]), np.array([0, 1, 1]))
  np.testing.assert_array_equal(groups["i2t"].groups, [[False, True, True], [True, False, False]])
  np.testing.assert_array_equal(groups["i2t"].group_of_query, [1, 0])
  np.testing.assert_array_equal(groups["t2i"].groups, [[False, True], [True, False]])
  np.testing.assert_array_equal(groups["t2i"].group_of_query, [1, 0, 0])


def test_semantic_k_is_checked_before_any_sweep():
  owner = np.repeat(np.arange(4), 2)
  with pytest.raises(ValueError, match="fit in the gallery of 4 items"):
    evaluate_retrieval(
      np.zeros((4, 8)),
      caption_to_image=owner,
      relevance=np.ones((4, 8)),
      options=EvalOptions(semantic_ks=(4,)),
    )


def test_coco_recalls_is_evaluate_retrieval_renamed():
  rng = np.random.default_rng(1)
  sim = rng.normal(size=(10, 50)).astype(np.float32)
  owner = np.repeat(np.arange(10), 5)
  options = EvalOptions(folds=5, curve_ks=(1, 5, 10))
  full = evaluate_retrieval(sim, caption_to_image=owner, options=options)
  coco = coco_recalls(sim, caption_to_image=owner)
  assert coco == {k.replace("full/", "5k/").replace("folds/", "1k/"): v for k, v in full.items()}


def test_empty_positive_sets():
  none = PositiveSets.empty(3, 7)
  assert (none.num_queries, none.num_gallery) == (3, 7)
  np.testing.assert_array_equal(none.num_positives, 0)
  assert np.all(none.indices == -1)


def _imports(path: pathlib.Path) -> set[str]:
  names = set()
  for node in ast.walk(ast.parse(path.read_text())):
    if isinstance(node, ast.ImportFrom) and node.module:
      names.add(node.module)
      names.update(f"{node.module}.{a.name}" for a in node.names)
    elif isinstance(node, ast.Import):
      names.update(a.name for a in node.names)
  return names


def test_evaluation_modules_import_each_other_without_cycles():
  folder = pathlib.Path(jitr.evaluation.__file__).parent
  modules = {p.stem: p for p in folder.glob("*.py") if p.stem != "__init__"}
  deps = {
    m: {n for n in modules if f"jitr.evaluation.{n}" in _imports(p) and n != m}
    for m, p in modules.items()
  }
  done, active = set(), []

  def visit(m):
    assert m not in active, "import cycle: " + " -> ".join(active[active.index(m) :] + [m])
    if m in done:
      return
    active.append(m)
    for n in sorted(deps[m]):
      visit(n)
    active.pop()
    done.add(m)

  for m in sorted(modules):
    visit(m)
  assert "suite" in deps["coco"] and "coco" not in deps["suite"]
