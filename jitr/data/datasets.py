"""The datasets jitr trains on, by name: what each one is and where its files live.

:data:`DATASETS` is the one registry of ``config.dataset`` values. Code that needs to
know something of a dataset (is its relevance exact, its splits, its captions per image,
which config fields name its data, what its captions are, which metric picks the best
checkpoint) asks :func:`dataset_info` instead of comparing the name as a string. What is
done by the kind of a dataset (how it is loaded, checked and pinned) is the kind's
``DataSource`` (:mod:`jitr.experiment.data_sources`, keyed by :attr:`DatasetInfo.kind`).

Besides the registered datasets, any ``NAME_precomp`` is a precomp dataset: the folder
``<precomp_root>/NAME_precomp/`` with ``train``, ``dev`` and ``test`` splits, whose
captions per image ``config.captions_per_image`` must give (:func:`captions_per_image`).

Any ``NAME_images`` (``f30k_images``, ``coco_images`` registered) is an image folder (kind
``"images"``): Karpathy's split file ``config.karpathy.json`` and the folder of its images
``config.karpathy.images``, read as pixels by a network of pixel towers (``"clip"``).

The labelled vector datasets (kind ``"labelled"``: a folder of image vectors, text
vectors and class labels, :mod:`jitr.data.labelled`) are those CMAL²R reports on:
``wiki`` (the Wikipedia dataset of Rasiwasia et al., 2010: 10 classes, one per pair) and
``pascal`` (Pascal VOC 2007 with the tags of Hwang & Grauman: 20 classes, several per
pair), each with its classes (:class:`LabelledLayout`), and ``labelled``, any such
folder.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from jitr.data.batch_keys import TEXT_VECTORS

SHAPES = "jitr_shapes"


@dataclasses.dataclass(frozen=True)
class LabelledLayout:
  """The classes of a labelled vector dataset, checked when it is read (``None``: any).

  Attributes:
    classes: the number of classes.
    multi_label: whether a pair may have several classes (``False``: exactly one each).
  """

  classes: int | None = None
  multi_label: bool | None = None


@dataclasses.dataclass(frozen=True)
class DatasetInfo:
  """One dataset of :data:`DATASETS`.

  Attributes:
    name: its ``config.dataset`` value.
    kind: the key of its ``DataSource`` in
      :data:`!jitr.experiment.data_sources.DATA_SOURCES`: ``"shapes"`` (the built-in TFDS
      dataset, generated under ``config.data_dir``), ``"precomp"`` (a
      ``<precomp_root>/<name>/`` folder of region features and caption files) or
      ``"labelled"`` (``config.labelled.folder``: image vectors, text vectors and class
      labels) or ``"images"`` (Karpathy's split file and its image folder,
      ``config.karpathy``).
    exact_relevance: whether the dataset knows the true relevance of every (image,
      caption) pair (``oracle`` graded sources and NDCG against the truth need it).
    data_fields: the config fields that name the data a run trains on, besides
      ``dataset`` itself.
    captions_per_image: each image's captions, in order (caption ``j`` belongs to image
      ``j // captions_per_image``); 0 when the name does not say (a precomp folder of
      another name: ``config.captions_per_image`` gives it).
    splits: the splits its files hold, the training split first.
    text_input: the batch key that holds each caption: ``"tokens"`` (word ids) or
      ``"text_vectors"``; a network must read it.
    best_metric: the validation metric the best checkpoint maximises (``"rsum"``, or the
      class MAP of both directions, ``"class/mAP"``).
    labelled: what a labelled vector dataset holds (``None`` for the others).
    pixels: whether its images are files a network reads as pixels (an image folder).
    rendered: whether its scenes also come as rendered RGB images, which a network of
      pixel towers reads instead of the region features (jitr_shapes).
  """

  name: str
  kind: str
  exact_relevance: bool
  data_fields: tuple[str, ...] = ()
  captions_per_image: int = 5
  splits: tuple[str, ...] = ("train", "dev", "test")
  text_input: str = "tokens"
  best_metric: str = "rsum"
  labelled: LabelledLayout | None = None
  pixels: bool = False
  rendered: bool = False

  @property
  def class_labels(self) -> bool:
    """Whether the dataset labels its pairs with classes (the ``labels`` graded source)."""
    return self.labelled is not None

  def data_name(self, **values: Any) -> str:
    """The dataset with the values of its :attr:`data_fields`, e.g. ``jitr_shapes/tiny``
    (``data_name(shapes_config="tiny")``) or ``f30k_precomp``."""
    return "/".join([self.name, *(str(values.get(f)) for f in self.data_fields)])


def labelled_dataset(name: str, layout: LabelledLayout) -> DatasetInfo:
  """A labelled vector dataset: one text (vector) per image, train and test files (the
  validation pairs held out of the training ones, or val files), best checkpoint by class
  MAP."""
  return DatasetInfo(
    name,
    "labelled",
    exact_relevance=False,
    captions_per_image=1,
    splits=("train", "test"),
    text_input=TEXT_VECTORS,
    best_metric="class/mAP",
    labelled=layout,
  )


def image_dataset(name: str) -> DatasetInfo:
  """An image folder with Karpathy's split file: 5 captions per image kept (the first of
  each), splits ``train`` (with COCO's ``restval``), ``val``, ``test``."""
  return DatasetInfo(
    name, "images", exact_relevance=False, splits=("train", "val", "test"), pixels=True
  )


#: A labelled vector dataset of any classes.
ANY_CLASSES = LabelledLayout()
#: Wikipedia: 10 classes, one per pair.
WIKI = LabelledLayout(classes=10, multi_label=False)
#: Pascal VOC 2007 with tags: 20 classes, any number per pair.
PASCAL = LabelledLayout(classes=20, multi_label=True)

#: The datasets by name (``config.dataset``): how each one is read.
DATASETS: dict[str, DatasetInfo] = {
  info.name: info
  for info in (
    DatasetInfo(
      SHAPES,
      "shapes",
      exact_relevance=True,
      data_fields=("shapes_config",),
      splits=("train", "val", "test"),
      rendered=True,
    ),
    DatasetInfo("f30k_precomp", "precomp", exact_relevance=False),
    # test: COCO 1K (SCAN's split), testall: COCO 5K
    DatasetInfo(
      "coco_precomp", "precomp", exact_relevance=False, splits=("train", "dev", "test", "testall")
    ),
    # IAPR TC-12 as LSEH releases it (yangong23/VSEnetworksLSEH): one caption per image
    DatasetInfo("iaprtc12_precomp", "precomp", exact_relevance=False, captions_per_image=1),
    labelled_dataset("wiki", WIKI),
    labelled_dataset("pascal", PASCAL),
    labelled_dataset("labelled", ANY_CLASSES),
    image_dataset("f30k_images"),
    image_dataset("coco_images"),
  )
}
PRECOMP_SUFFIX = "_precomp"
IMAGES_SUFFIX = "_images"


def dataset_info(name: str) -> DatasetInfo:
  """The registered dataset ``name``.

  Raises:
    ValueError: an unknown name (the message names ``config.dataset`` and the valid ones).
  """
  if name in DATASETS:
    return DATASETS[name]
  if isinstance(name, str) and name.endswith(PRECOMP_SUFFIX) and name != PRECOMP_SUFFIX:
    return DatasetInfo(
      name,
      "precomp",
      exact_relevance=False,
      data_fields=("captions_per_image",),
      captions_per_image=0,
    )
  if isinstance(name, str) and name.endswith(IMAGES_SUFFIX) and name != IMAGES_SUFFIX:
    return image_dataset(name)
  raise ValueError(
    f"config.dataset: expected one of {', '.join(map(repr, DATASETS))}, the name of any "
    f"precomp folder, NAME_precomp, or of any image folder, NAME_images; got {name!r}"
  )


def captions_per_image(info: DatasetInfo, given: int) -> int:
  """The captions per image of a run on ``info``: ``given`` (``config.captions_per_image``)
  when positive, else the dataset's own.

  Raises:
    ValueError: neither says (a precomp folder of another name without
      ``config.captions_per_image``), or ``given`` is not a non-negative integer.
  """
  if isinstance(given, bool) or not isinstance(given, int) or given < 0:
    raise ValueError(
      f"config.captions_per_image: expected a non-negative integer (0: the dataset's own), "
      f"got {given!r}"
    )
  if given:
    return given
  if not info.captions_per_image:
    raise ValueError(
      f"config.captions_per_image: {info.name} is not a dataset jitr knows; give its "
      "captions per image (5 for Flickr30K / COCO-style folders, 1 for IAPR TC-12-style)"
    )
  return info.captions_per_image
