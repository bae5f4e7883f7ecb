"""TensorFlow for input pipelines, kept off any accelerator."""


def import_tf():
  """``tensorflow`` with GPUs hidden from it, so tf.data never takes accelerator memory."""
  import tensorflow as tf

  try:
    tf.config.set_visible_devices([], "GPU")
  except RuntimeError:  # devices already initialised by someone else
    pass
  return tf
