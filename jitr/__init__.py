"""jitr: relevance-aware image-text retrieval in JAX/Flax.

The functional API: ``from jitr import losses`` (every loss of Listwise ITR,
CMAL²R, SAM and LSEH as pure functions of a similarity matrix).
"""

from jitr import losses

#: The version of this jitr (as in pyproject.toml).
__version__ = "0.1.0"

__all__ = ["losses", "__version__"]
