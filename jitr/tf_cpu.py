"""TensorFlow for input pipelines, kept off any accelerator and quiet on stderr."""

import os
import sys

QUIET_TF_ENVIRONMENT = {"TF_CPP_MIN_LOG_LEVEL": "2", "TF_ENABLE_ONEDNN_OPTS": "0"}
"""Set (where unset) before TensorFlow's first import: no C++ INFO lines and no oneDNN notice
on stderr, where the apps print their one-line errors. oneDNN's custom operations only
speed up TensorFlow's own math, which jitr's input pipelines do not use."""


def import_tf():
  """``tensorflow`` with GPUs hidden from it, so tf.data never takes accelerator memory.
  Before its first import, :data:`QUIET_TF_ENVIRONMENT` fills the variables left unset."""
  if "tensorflow" not in sys.modules:
    for name, value in QUIET_TF_ENVIRONMENT.items():
      os.environ.setdefault(name, value)
  import tensorflow as tf

  try:
    tf.config.set_visible_devices([], "GPU")
  except RuntimeError:  # devices already initialised by someone else
    pass
  return tf
