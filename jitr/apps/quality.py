"""The estimator-vs-truth table of ``jitr-relevance-quality`` (no flags: importable by tests).

See :mod:`jitr.apps.relevance_quality` for what each column means.
"""

from __future__ import annotations

COLUMNS = (
  ("tau_b/i2t", "τ-b i2t"),
  ("tau_b/t2i", "τ-b t2i"),
  ("NDCG@10/i2t", "NDCG@10 i2t"),
  ("NDCG@10/t2i", "NDCG@10 t2i"),
  ("mAP@R/i2t", "mAP@R i2t"),
  ("mAP@R/t2i", "mAP@R t2i"),
  ("MAE", "MAE"),
  ("gain@0", "gain@0"),
)
PERCENT = {"tau_b/i2t", "tau_b/t2i", "NDCG@10/i2t", "NDCG@10/t2i", "mAP@R/i2t", "mAP@R/t2i"}


def estimated_relevance(name: str, captions, exact, *, estimator_kwargs=None, teacher=None):
  """``[N_img, N_cap]`` relevance of estimator ``name`` over ``captions`` (a CaptionSet),
  positives 1, and the positives mask:

  * ``oracle``: ``exact`` itself; ``constant``: 0.5 everywhere;
  * a registry name (``sentence``, ``lsa``, ``cider``): fitted on ``captions``,
    ``clip(score / relevance_scale, 0, 1)``, with ``estimator_kwargs[name]``;
  * ``teacher:WORKDIR``: ``(1 + cos(e_i, t_j))/2`` of the embeddings ``teacher(WORKDIR)``
    returns (``losses.relevance_from_pair_embeddings``);
  * ``hmean:A|B[|...]`` / ``mean:A|B[|...]``: the harmonic / arithmetic mean of the parts'
    relevance, each part any of the above (``jitr.training.graded.COMBINERS``, as
    training combines graded sources).
  """
  import numpy as np

  from jitr import losses
  from jitr.relevance.registry import make_estimator
  from jitr.training.graded import COMBINERS, PART_SEPARATOR

  n_img, n_cap = len(captions.image_ids), len(captions.captions)
  owner = np.repeat(np.arange(n_img), np.diff(captions.image_offsets))
  positives = owner[None, :] == np.arange(n_img)[:, None]
  kind, _, rest = name.partition(":")
  if kind in COMBINERS and rest:
    kw = dict(estimator_kwargs=estimator_kwargs, teacher=teacher)
    parts = [estimated_relevance(p, captions, exact, **kw)[0] for p in rest.split(PART_SEPARATOR)]
    rel = np.asarray(COMBINERS[kind](*parts))
  elif kind == "teacher" and rest:
    if teacher is None:
      raise ValueError(f"{name}: no teacher embeddings given (estimated_relevance(teacher=...))")
    rel = np.asarray(losses.relevance_from_pair_embeddings(*teacher(rest)))
  elif name == "oracle":
    rel = np.asarray(exact, np.float32)
  elif name == "constant":
    rel = np.full((n_img, n_cap), 0.5, np.float32)
  else:
    kwargs = dict((estimator_kwargs or {}).get(name, {}))
    estimator = make_estimator(name, **kwargs).fit(captions)
    scores = estimator.image_scores(np.arange(n_img))
    rel = np.clip(np.asarray(scores, np.float64) / estimator.relevance_scale, 0.0, 1.0)
  return np.where(positives, 1.0, rel).astype(np.float32), positives


def quality_rows(estimated, exact, positives, calibrations, *, log=print) -> list[dict]:
  """One row per calibration chain: the metrics of the module docstring (fractions)."""
  import numpy as np

  from jitr.evaluation.relevance_quality import ranking_quality, value_errors
  from jitr.losses.calibration import parse_calibration
  from jitr.relevance.agreement import kendall_tau

  flat_exact = {"i2t": np.ravel(exact), "t2i": np.ravel(exact.T)}
  tau_of_uncalibrated: dict[str, float] = {}
  rows = []
  for spec in calibrations:
    chain = parse_calibration(spec)
    mats = {
      "i2t": np.asarray(chain(estimated, positives=positives)),
      "t2i": np.asarray(chain(estimated.T, positives=positives.T)),
    }
    row = {"calibration": chain.spec or "none"}
    for d in ("i2t", "t2i"):
      if chain.strict and "i2t" in tau_of_uncalibrated:
        row[f"tau_b/{d}"] = tau_of_uncalibrated["i2t"]  # an order-keeping map: the same tau
      elif d == "t2i" and not chain.per_query:
        row[f"tau_b/{d}"] = row["tau_b/i2t"]  # elementwise: the same pairs, the same values
      else:
        log(f"  tau-b ({row['calibration']}, {d})")
        row[f"tau_b/{d}"] = kendall_tau(np.ravel(mats[d]), flat_exact[d], "b")
      if not chain:
        tau_of_uncalibrated[d] = row[f"tau_b/{d}"]
      ranks = ranking_quality(mats[d], exact if d == "i2t" else exact.T, ks=(10,))
      row[f"NDCG@10/{d}"], row[f"mAP@R/{d}"] = ranks["NDCG@10"], ranks["mAP@R"]
    row.update(value_errors(mats["i2t"], exact, positives))
    rows.append(row)
  return rows


def format_table(rows: list[dict]) -> str:
  """The rows as one markdown table (x100 for tau, NDCG and mAP@R)."""
  head = ["split", "estimator", "calibration"] + [title for _, title in COLUMNS]
  lines = ["| " + " | ".join(head) + " |", "|" + "---|" * 3 + "---:|" * len(COLUMNS)]
  for r in rows:
    estimator = r["estimator"].replace("|", "\\|")  # a combination's parts, not a new cell
    cells = [r["split"], estimator, f"`{r['calibration']}`"]
    for key, _ in COLUMNS:
      v = r[key]
      cells.append(f"{100 * v:.1f}" if key in PERCENT else f"{v:.3f}")
    lines.append("| " + " | ".join(cells) + " |")
  return "\n".join(lines)
