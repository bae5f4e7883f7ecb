"""``jitr-eval``: score a trained workdir's checkpoint on a split and write the report.

  jitr-eval --workdir=workdirs/default --split=test [--checkpoint=best|latest]
  jitr-eval --workdir=workdirs/sgr --ensemble=workdirs/saf[,more] --split=test
  jitr-eval --workdir=workdirs/f30k --split=test --semantic=topk:cider
  jitr-eval --workdir=workdirs/f30k --split=test --semantic=topk:spice \\
    --semantic_records=rel/f30k_test_spice
  jitr-eval --workdir=workdirs/coco --split=test --eccv

Writes ``<workdir>/eval_<split>/`` (``metrics.json``, ``metrics.md``, curves and, for
jitr_shapes, ``queries.png``); with ``--ensemble``, the mean of every workdir's
similarity matrix into ``<workdir>/eval_<split>_ensemble/``; with ``--semantic``, also SAM's
NCS@K and Semantic Recall@K (K = 1, 5, 10) against relevance records of the split; with
``--eccv``, the ECCV Caption protocol on COCO's 5K test split. Started
by a cluster (a Cloud TPU pod slice, SLURM, Open MPI, Kubernetes), the same command on every
host joins the job JAX detects: each process scores its share and process 0 writes the
report. Flag parsing, then :func:`jitr.experiment.evaluate_workdir`.
"""

from __future__ import annotations

from absl import flags

from jitr.apps._cli import (
  App,
  ending_on_a_lost_process,
  flag_inputs,
  join_configured_job,
  workdir_flag,
)

_WORKDIR = workdir_flag(
  "A jitr-train workdir (config.json + checkpoints/): a folder or a gs:// URL."
)
_SPLIT = flags.DEFINE_enum("split", "test", ["val", "test"], "Split to evaluate.")
_CHECKPOINT = flags.DEFINE_enum(
  "checkpoint", "best", ["best", "latest"], "Which checkpoint to load."
)
_NUM_QUERIES = flags.DEFINE_integer(
  "num_queries",
  4,
  "Queries per direction in the jitr_shapes panel (queries.png); 0: no panel.",
  lower_bound=0,
)
_PROTOCOL = flags.DEFINE_enum(
  "protocol",
  "jitr",
  ["jitr", "official"],
  "jitr: the full report (ties broken by the lower index); official: Recall@K exactly as the "
  "official evaluation.py (numpy's argsort per query, ties included; COCO also per fold) "
  "into <workdir>/eval_<split>[_ensemble]_official/.",
)
_ENSEMBLE = flags.DEFINE_list(
  "ensemble",
  [],
  "More jitr-train workdirs (comma-separated): score the mean of all similarity matrices "
  "(SGRAF = SGR + SAF; VSRN's two models) into <workdir>/eval_<split>_ensemble/.",
)

_ALLOW_CHANGED_INPUTS = flags.DEFINE_bool(
  "allow_changed_inputs",
  False,
  "Evaluate although a file a workdir pinned in inputs.json changed (features, captions, "
  "vocabulary, concept files, BERT folder); metrics.json lists the changes.",
)

_SEMANTIC = flags.DEFINE_string(
  "semantic",
  "",
  "Also report SAM's NCS@K and Semantic Recall@K (K = 1, 5, 10; semantic/{i2t,t2i}/...) "
  "against the top-K scores of relevance records of the split: topk:cider (CIDEr-D of the "
  "split's captions, computed under the data folder on first use) or topk:NAME with "
  "--semantic_records.",
)
_SEMANTIC_RECORDS = flags.DEFINE_string(
  "semantic_records",
  "",
  "With --semantic=topk:NAME: the relevance records of the split's caption file that "
  "jitr-precompute wrote (e.g. --scores=spice=FILE for SPICE scores computed elsewhere).",
)

_ECCV = flags.DEFINE_bool(
  "eccv",
  False,
  "Also report the ECCV Caption protocol (eccv/{i2t,t2i}/mAP@R, R-P, R@K) on COCO's 5K test "
  "split, with the annotations of the eccv_caption package (pip install eccv-caption).",
)

APP = App(
  "jitr-eval", __name__, requires=("workdir",), inputs=flag_inputs("workdir", "semantic_records")
)


def main() -> None:
  """Scores ``--workdir`` (with ``--ensemble``) as the flags say and writes the report."""
  # Imported here, not at the top: `jitr-eval --help` answers without loading JAX.
  from jitr.experiment import ExtraMetrics, SemanticSource, evaluate_workdir

  job = join_configured_job()
  with ending_on_a_lost_process(APP.name, job.process_count):
    evaluate_workdir(
      _WORKDIR.value,
      split=_SPLIT.value,
      checkpoint=_CHECKPOINT.value,
      num_queries=_NUM_QUERIES.value,
      ensemble=_ENSEMBLE.value,
      protocol=_PROTOCOL.value,
      allow_changed_inputs=_ALLOW_CHANGED_INPUTS.value,
      extra=ExtraMetrics(
        SemanticSource(_SEMANTIC.value, records=_SEMANTIC_RECORDS.value), eccv=_ECCV.value
      ),
    )


def run() -> None:
  """Console-script entry point."""
  APP.run(main)


if __name__ == "__main__":
  run()
