"""The experiment: a whole training run and a workdir's evaluation, as the apps run them.

As in flax's examples, the apps only parse flags and call one function here:
``jitr-train`` calls :func:`train_and_evaluate`, ``jitr-eval`` calls
:func:`evaluate_workdir` and ``jitr-relevance-quality`` calls
:func:`relevance_quality_report` (each estimator against jitr_shapes' exact relevance).
This package wires the others together (``data``, ``relevance``, ``models``, ``losses``,
``training``, ``evaluation``); nothing below it imports it.
"""

from jitr.experiment.evaluate import ExtraMetrics, evaluate_workdir
from jitr.experiment.evaluator import Evaluator
from jitr.experiment.loaded_data import LoadedData, load_data
from jitr.experiment.model_state import initial_state
from jitr.experiment.relevance_quality import QualityGrid, relevance_quality_report
from jitr.experiment.semantic_scores import SemanticSource
from jitr.experiment.train import RunResult, train_and_evaluate

__all__ = [
  "Evaluator",
  "LoadedData",
  "QualityGrid",
  "RunResult",
  "ExtraMetrics",
  "SemanticSource",
  "evaluate_workdir",
  "initial_state",
  "load_data",
  "relevance_quality_report",
  "train_and_evaluate",
]
