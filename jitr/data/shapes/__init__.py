"""``jitr_shapes``: synthetic scenes, their captions and the exact graded relevance between them.

* :mod:`!scene` -- scenes of 1-3 objects and their int32 arrays;
* :mod:`!render` -- a scene rasterised to a 64x64 RGB image;
* :mod:`!regions` -- BUTD-like region features of a scene;
* :mod:`!captions` -- the caption grammar and the facts each caption states;
* :mod:`!relevance` -- the exact relevance of a caption's facts to a scene;
* :mod:`!example` -- one example (everything the builder stores) from ``(seed, split, index)``;
* :mod:`!split` -- a built split as a :class:`~jitr.data.pairs.RetrievalSplit`;
* :mod:`!tfds` -- the ``jitr_shapes`` TFDS builder (``build``, ``load_split``,
  ``split_relevance``). It imports TensorFlow Datasets, so this package does not import it:
  ``from jitr.data.shapes import tfds as shapes_tfds`` where it is needed.

All but :mod:`!tfds` are numpy only.
"""

from jitr.data.shapes.captions import (
  CAPTIONS_PER_IMAGE,
  FACT_FIELDS,
  CaptionFacts,
  Mention,
  generate_captions,
  stack_facts,
)
from jitr.data.shapes.example import make_example, make_split
from jitr.data.shapes.regions import region_features
from jitr.data.shapes.relevance import relevance_matrix
from jitr.data.shapes.scene import (
  MAX_OBJECTS,
  Scene,
  SceneObject,
  example_rng,
  sample_scene,
  stack_scenes,
)
from jitr.data.shapes.split import retrieval_split

__all__ = [
  "CAPTIONS_PER_IMAGE",
  "FACT_FIELDS",
  "MAX_OBJECTS",
  "CaptionFacts",
  "Mention",
  "Scene",
  "SceneObject",
  "example_rng",
  "generate_captions",
  "make_example",
  "make_split",
  "region_features",
  "relevance_matrix",
  "retrieval_split",
  "sample_scene",
  "stack_facts",
  "stack_scenes",
]
