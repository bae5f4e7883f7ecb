"""The parity tests import open_clip (with torchvision and timm, which need PyPI's torch):
they run in the environment ``.ci/open_clip_parity.sh`` makes and are not collected where
open_clip is not installed."""

import importlib.util

collect_ignore_glob = [] if importlib.util.find_spec("open_clip") else ["test_*.py"]
