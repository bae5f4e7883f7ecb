"""Every published table: its runs build configs jitr-train takes, each of its metrics is
a key of jitr-eval's report under the table's protocol, a run's name means one run, and
the printed numbers agree with each other where the paper prints a sum or a mean."""

import numpy as np
import pytest

from jitr.evaluation import evaluate_retrieval
from jitr.evaluation.official import official_recall
from jitr.experiment.evaluate import official_metrics
from jitr.experiment.run_config import check_train_config
from jitr.papers import TABLES, SeededRun
from jitr.papers.published import RECALL_METRICS
from jitr.papers.run_configs import parsed_config
from tests.bert_folder import write_bert_folder
from tests.labelled_folders import PASCAL, WIKI, write_labelled

RUNS = {run for table in TABLES.values() for run in table.runs()}


@pytest.mark.parametrize("run", sorted(RUNS, key=lambda r: r.name), ids=lambda r: r.name)
def test_each_run_builds_a_config_jitr_train_takes(run, tmp_path):
  sets = [f"precomp_root={tmp_path}"]
  if "vseinf" in run.spec:
    sets.append(f"text.pretrained={write_bert_folder(tmp_path / 'bert')}")
  labelled = run.dataset in ("wiki", "pascal")  # CMAL²R's class-labelled vectors
  if labelled:
    shape = {"wiki": WIKI, "pascal": PASCAL}[run.dataset]
    write_labelled(tmp_path / run.dataset, shape, {"train": 40, "test": 20})
    sets.append(f"labelled.folder={tmp_path / run.dataset}")
  config = parsed_config(SeededRun(run, 2, str(tmp_path / "w")), sets)
  check_train_config(config)
  assert config.seed == 2
  assert config.dataset == (run.dataset if labelled else f"{run.dataset}_precomp")
  for field, value in run.overrides:  # e.g. CVSE's COCO run tests on the 1K split
    node = config
    for part in field.split("."):
      node = node[part]
    assert str(node) == value, field


def test_a_run_name_means_one_run():
  names = {}
  for run in RUNS:
    assert names.setdefault(run.name, run) == run, run.name


def _validated_runs(root) -> list[str]:
  """Three workdirs (LMH1, LMH2, LSEH) with a validation history of two validations each."""
  from jitr.training.validation_history import with_validation, write_history

  workdirs = []
  for name, rsums in (("lmh1", (300.0, 360.0)), ("lmh2", (240.0, 200.0)), ("lseh", (310.0, 400.0))):
    history = []
    for step, rsum in zip((5, 10), rsums):
      history = with_validation(history, step, 10, {"full/rsum": rsum})
    (root / name).mkdir()
    write_history(str(root / name / "validation.json"), history, 10)
    workdirs.append(str(root / name))
  return workdirs


def _any_pooled(protocol: str):
  return next(t for t in TABLES.values() if t.protocol == protocol)


def test_every_metric_is_a_key_of_jitr_evals_report(tmp_path):
  from jitr.evaluation.positives import positives_from_owner
  from jitr.papers.pooled_scores import pooled_scores
  from jitr.papers.validation_scores import efficiency_scores

  rng = np.random.default_rng(0)
  sim = rng.normal(size=(10, 50))
  caption_image = np.repeat(np.arange(10), 5)
  official_keys = {
    **official_metrics(sim, caption_image, 5),
    **official_metrics(sim, caption_image, None),
  }
  keys = set(official_metrics(sim, caption_image, 5)) | set(
    official_metrics(sim, caption_image, None)
  )
  class_keys = {"class/i2t/mAP", "class/t2i/mAP", "class/mAP"}
  # jitr's protocol with semantic scores (SAM's NCS): a gallery NCS@10 fits in
  wide = rng.normal(size=(20, 100))
  semantic_keys = set(
    evaluate_retrieval(
      wide,
      caption_to_image=np.repeat(np.arange(20), 5),
      fold_ids=np.arange(20) // 10,
      semantic=wide,
    )
  )
  report = {
    "class": class_keys,
    "semantic": semantic_keys,
    "semantic_folds": semantic_keys,
    "validation": set(efficiency_scores(_validated_runs(tmp_path))),
    **{
      protocol: set(pooled_scores(_any_pooled(protocol), ["a"], lambda t, w: official_keys))
      for protocol in ("pooled_full", "pooled_folds")
    },
    "eccv": set(
      evaluate_retrieval(
        wide,
        caption_to_image=np.repeat(np.arange(20), 5),
        extended_positives={"eccv": positives_from_owner(np.repeat(np.arange(20), 5))},
      )
    ),
  }
  for table in TABLES.values():
    assert bool(table.semantic) == table.protocol.startswith("semantic"), table.name
    if table.protocol == "reference":  # printed numbers jitr does not compute: no run
      assert not table.runs(), table.name
      continue
    for metric in table.metrics:
      for key in table.report_keys(metric):
        assert key in report.get(table.protocol, keys), (table.name, key)
  assert set(official_recall(sim, 5)) >= {f"{d}/R@1" for d in ("i2t", "t2i")}


def test_printed_sums_and_means_agree_with_their_recalls():
  """RSUM = the six R@K and mR = their mean, to the printed rounding (each of the six to
  ±0.05, the total or mean to ±0.05 more)."""
  checked = 0
  for table in TABLES.values():
    for row in table.rows:
      if not set(RECALL_METRICS) <= set(row.values):
        continue
      total = sum(row.values[m] for m in RECALL_METRICS)
      if "rsum" in row.values:
        assert abs(total - row.values["rsum"]) <= 6 * 0.05 + 0.05, (table.name, row.label)
        checked += 1
      if "mR" in row.values:
        assert abs(total / 6 - row.values["mR"]) <= 0.05 + 0.05, (table.name, row.label)
        checked += 1
  # CVSE's two rows print mR, Listwise ITR's 89 rows RSUM, SAM's 18 (Table 3) + 16 (Table 2)
  assert checked == 125
