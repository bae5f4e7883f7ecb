"""Input pipelines: precomp readers, the jitr_shapes TFDS builder, relevance TFRecord readers.

Import the submodules directly (e.g. ``from jitr.data import precomp``).
"""
