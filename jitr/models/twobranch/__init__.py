"""The two-branch network of CMAL²R's experiments: one MLP per modality into a common
space (``model``), its adapter to :class:`~jitr.models.RetrievalModel` (``adapter``) and
its registry entry (``network``, ``"twobranch"``)."""

from jitr.models.twobranch.adapter import INPUTS, TEXT_VECTORS, two_branch_model
from jitr.models.twobranch.model import Branch, TwoBranch
from jitr.models.twobranch.network import NETWORK

__all__ = ["INPUTS", "NETWORK", "TEXT_VECTORS", "Branch", "TwoBranch", "two_branch_model"]
