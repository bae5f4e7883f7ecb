"""The torch bridge tests need the ``torch`` extra; without it they are skipped."""

import pytest

pytest.importorskip("torch")
