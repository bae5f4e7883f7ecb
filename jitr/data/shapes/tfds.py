"""The ``jitr_shapes`` TFDS builder: synthetic scenes with exact graded relevance.

Usage::

    from jitr.data.shapes import tfds as shapes_tfds
    builder = shapes_tfds.build(data_dir="/tmp/tfds", config="default")
    ds = builder.as_dataset(split="train")           # tf.data of examples
    arrays = shapes_tfds.load_split("test", data_dir="/tmp/tfds")
    rel = shapes_tfds.split_relevance("test", data_dir="/tmp/tfds")  # [N, 5N]

Examples are stored in index order (shuffling disabled), so caption ``k`` of
image ``i`` is column ``5·i + k`` of the relevance matrix. Importing this
module does not import TensorFlow (``tensorflow_datasets`` loads it lazily);
:func:`build` and :func:`load_split` import it through
:func:`jitr.tf_cpu.import_tf`, which keeps it off any GPU.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import glob as _glob
import os
import re
from typing import Any

import numpy as np
import tensorflow_datasets as tfds
from absl import logging
from etils import epath  # noqa: TID253 (a train-extra module: TFDS needs epath itself)
from google.protobuf import json_format

from jitr import fileio, paths
from jitr.data.shapes import captions as shapes_captions
from jitr.data.shapes import example as shapes_example
from jitr.data.shapes import regions as shapes_regions
from jitr.data.shapes import relevance as shapes_relevance
from jitr.data.shapes import render as shapes_render
from jitr.data.shapes import scene as shapes_scene
from jitr.progress import Progress
from jitr.tf_cpu import import_tf


@dataclasses.dataclass(eq=False)
class ShapesConfig(tfds.core.BuilderConfig):
  """Sizes of the splits and the generation parameters of ``jitr_shapes``."""

  num_train: int = 10_000
  num_val: int = 1_000
  num_test: int = 1_000
  seed: int = 0
  region_dim: int = shapes_regions.DEFAULT_REGION_DIM
  max_regions: int = shapes_scene.MAX_OBJECTS

  def split_sizes(self) -> dict[str, int]:
    return {"train": self.num_train, "val": self.num_val, "test": self.num_test}


DEFAULT = ShapesConfig(name="default", description="10,000 / 1,000 / 1,000 images.")
TINY = ShapesConfig(
  name="tiny", num_train=40, num_val=10, num_test=10, description="40 / 10 / 10 images, for tests."
)


class JitrShapes(tfds.core.GeneratorBasedBuilder):
  """Rendered scenes of 1-3 shapes, 5 captions each, BUTD-like region features
  and the facts from which exact graded relevance is computed."""

  # TFDS locates a builder's code through `importlib_resources` (absent on
  # Python >= 3.11 installs); giving the path directly avoids that lookup.
  code_path = epath.Path(__file__)
  VERSION = tfds.core.Version("1.0.0")
  RELEASE_NOTES = {"1.0.0": "Initial release."}
  BUILDER_CONFIGS = [DEFAULT, TINY]

  def _info(self) -> tfds.core.DatasetInfo:
    cfg: ShapesConfig = self.builder_config
    return self.dataset_info_from_configs(
      description=__doc__,
      features=tfds.features.FeaturesDict(
        {
          "image": tfds.features.Image(
            shape=(shapes_render.IMAGE_SIZE, shapes_render.IMAGE_SIZE, 3)
          ),
          "regions": tfds.features.Tensor(
            shape=(cfg.max_regions, cfg.region_dim), dtype=np.float32
          ),
          "region_mask": tfds.features.Tensor(shape=(cfg.max_regions,), dtype=np.bool_),
          "captions": tfds.features.Sequence(
            tfds.features.Text(), length=shapes_captions.CAPTIONS_PER_IMAGE
          ),
          "caption_facts": tfds.features.Tensor(
            shape=(shapes_captions.CAPTIONS_PER_IMAGE, shapes_captions.FACT_FIELDS), dtype=np.int32
          ),
          "facts_json": tfds.features.Sequence(
            tfds.features.Text(), length=shapes_captions.CAPTIONS_PER_IMAGE
          ),
          "scene": tfds.features.Tensor(
            shape=(shapes_scene.MAX_OBJECTS, shapes_scene.OBJECT_FIELDS), dtype=np.int32
          ),
          "scene_seed": np.int64,
          "image_id": np.int64,
        }
      ),
      supervised_keys=None,
      disable_shuffling=True,
    )

  def _log_download_bytes(self) -> None:
    """Says what is generated (TFDS's own message reports sizes, unknown before
    a first build, of a download that does not exist)."""
    cfg: ShapesConfig = self.builder_config
    logging.info(
      "Generating jitr_shapes/%s (%d / %d / %d images) in %s",
      cfg.name,
      cfg.num_train,
      cfg.num_val,
      cfg.num_test,
      self.data_dir,
    )

  def _log_download_done(self) -> None:
    logging.info("jitr_shapes/%s is ready in %s", self.builder_config.name, self.data_dir)

  def _split_generators(self, dl_manager):
    del dl_manager  # nothing to download
    cfg: ShapesConfig = self.builder_config
    return {split: self._generate_examples(split, n) for split, n in cfg.split_sizes().items()}

  # The line counting the images generated (set by `build`), or None.
  shown: Progress | None = None

  def _generate_examples(self, split: str, num: int):
    cfg: ShapesConfig = self.builder_config
    for index in range(num):
      # PNG-encoded here (zlib) rather than by TFDS through a TF graph: 3x faster.
      yield (
        index,
        shapes_example.make_example(
          cfg.seed, split, index, region_dim=cfg.region_dim, max_regions=cfg.max_regions, png=True
        ),
      )
      if self.shown is not None:  # the example was taken: one more image generated
        self.shown.advance()


def builder(data_dir: str, config: str | ShapesConfig = "default") -> JitrShapes:
  """The ``jitr_shapes`` builder for ``config`` (a name or a :class:`ShapesConfig`)
  rooted at ``data_dir`` (nothing is generated).

  Raises:
    ValueError: a built dataset whose ``dataset_info.json`` cannot be read (empty, not
      JSON): names the file and says to delete the dataset folder to rebuild it.
    jitr.paths.StorageError: ``data_dir`` is a storage URL that cannot be reached.
  """
  paths.check_reachable(data_dir)  # TFDS's own error for a bucket it cannot reach is a traceback
  try:
    return JitrShapes(data_dir=str(data_dir), config=config)
  except (json_format.Error, tfds.core.dataset_info.DatasetInfoFileError) as err:
    folder = _variant_dir(data_dir, config)
    detail = " ".join(str(err).split())
    raise ValueError(
      f"{folder}/dataset_info.json: not a readable TFDS dataset info file ({detail}); "
      f"delete {folder} and run again to rebuild it"
    ) from None


def _variant_dir(data_dir: str, config: str | ShapesConfig) -> str:
  """``DATA_DIR/jitr_shapes/CONFIG/VERSION``: the folder of one built config."""
  name = config if isinstance(config, str) else config.name
  return f"{data_dir}/{JitrShapes.name}/{name}/{JitrShapes.VERSION}"


def build(
  data_dir: str,
  config: str | ShapesConfig = "default",
  *,
  progress_bar: bool = False,
  progress: bool = True,
) -> JitrShapes:
  """Generates ``jitr_shapes`` into ``data_dir`` (a no-op if already there) and
  returns its builder; TFDS's per-split progress bars only if ``progress_bar``. A build
  draws one :class:`~jitr.progress.Progress` line on stderr (``progress``): the images
  generated of all splits' total, images per second and the ETA.

  TFDS writes into an unfinished folder (``incomplete.*`` beside the version folder) and
  renames it when every split is written, so a failed build leaves no partial dataset.

  Raises:
    OSError: ``ENOSPC``, the disk filled up: one line naming the file being written; the
      unfinished folder of this build is removed (built datasets are untouched), and the
      same call builds it once space is freed.
  """
  import_tf()  # GPUs hidden from TF before TFDS writes with it
  tfds.display_progress_bar(progress_bar)
  b = builder(data_dir, config)
  before = _unfinished_builds(b.data_dir)
  built = paths.exists(os.path.join(b.data_dir, "dataset_info.json"))
  total = sum(b.builder_config.split_sizes().values())
  label = f"building jitr_shapes/{b.builder_config.name}"
  try:
    with Progress(total, "images", label=label, enabled=progress and not built) as shown:
      b.shown = shown
      b.download_and_prepare(
        download_config=tfds.download.DownloadConfig(
          compute_stats=tfds.download.ComputeStatsMode.SKIP
        )
      )
  except Exception as err:
    if not fileio.is_disk_full(err):
      raise
    for path in sorted(_unfinished_builds(b.data_dir) - before):
      with contextlib.suppress(OSError):
        paths.rmtree(path)
    raise OSError(errno.ENOSPC, _disk_full_message(b, err)) from None
  return b


def _unfinished_builds(version_dir: str) -> set[str]:
  """TFDS's unfinished build folders of the variant whose version folder is ``version_dir``
  (``CONFIG/incomplete.XXXXXX_VERSION``)."""
  parent, version = os.path.split(os.fspath(version_dir).rstrip("/"))
  return set(paths.glob(parent, f"incomplete.*_{_glob.escape(version)}"))


def written_path(err: BaseException) -> str | None:
  """The file that a failed write named: the ``filename`` of an ``OSError`` in ``err``'s
  chain, or the ``PATH`` of TensorFlow's ``PATH; No space left on device``; else ``None``."""
  seen = set()
  while err is not None and id(err) not in seen:
    seen.add(id(err))
    if isinstance(err, OSError) and err.filename:
      return os.fspath(err.filename)
    found = re.search(r"(\S+); No space left on device", str(err))
    if found:
      return found.group(1)
    err = err.__cause__ or err.__context__
  return None


def final_path(path: str) -> str:
  """Where a file of TFDS's unfinished build folder ends up once the build completes:
  ``.../CONFIG/incomplete.XXXXXX_VERSION/NAME`` -> ``.../CONFIG/VERSION/NAME``.

  >>> final_path("/d/jitr_shapes/tiny/incomplete.AB12CD_1.0.0/jitr_shapes-train.tfrecord")
  '/d/jitr_shapes/tiny/1.0.0/jitr_shapes-train.tfrecord'
  """
  return re.sub(r"/incomplete\.[0-9A-Za-z]+_([^/]+)/", r"/\1/", path)


def _disk_full_message(b: tfds.core.DatasetBuilder, err: BaseException) -> str:
  """The one line of a build that ran out of space."""
  written = written_path(err)
  target = final_path(written) if written else b.data_dir
  return (
    f"disk full: could not write {target} while building jitr_shapes/{b.builder_config.name} "
    "(its unfinished files were removed); free space and run the same command again"
  )


def load_split(
  split: str, *, data_dir: str, config: str | ShapesConfig = "default", images: bool = True
) -> dict[str, Any]:
  """A built split as numpy arrays in index order.

  Returns ``image`` ``[N, 64, 64, 3]`` (unless ``images=False``), ``regions``,
  ``region_mask``, ``scene``, ``caption_facts`` ``[N, 5, FACT_FIELDS]``,
  ``image_id``, ``scene_seed`` and ``captions`` / ``facts_json`` as lists of
  ``5·N`` str (image-major). Raises ``FileNotFoundError`` if the split was not
  built under ``data_dir``, ``ValueError`` naming the file and the fix when the build is
  damaged (a record file missing, empty or corrupt; ``dataset_info.json`` missing or
  unreadable).
  """
  import_tf()  # GPUs hidden from TF before tf.data reads the split
  b = builder(data_dir, config)
  if not b.is_prepared():
    # TFDS moves a finished build into place: a folder without its info was damaged later
    if paths.isdir(b.data_dir):
      raise ValueError(
        f"{b.data_dir}/dataset_info.json: missing from a built jitr_shapes/"
        f"{b.builder_config.name}; delete {b.data_dir} and run again to rebuild it"
      )
    raise FileNotFoundError(
      f"jitr_shapes/{b.builder_config.name} is not built under {data_dir!r} "
      f"(expected {b.data_dir}); run jitr.data.shapes.tfds.build(data_dir, ...)"
    )
  _check_split_files(b, split)
  decoders = None if images else {"image": tfds.decode.SkipDecoding()}
  tf = import_tf()
  try:
    data = tfds.as_numpy(b.as_dataset(split=split, batch_size=-1, decoders=decoders))
  except (
    tf.errors.DataLossError,
    tf.errors.InvalidArgumentError,
    tf.errors.FailedPreconditionError,  # fewer records than dataset_info.json lists
    tf.errors.NotFoundError,
  ) as err:
    raise ValueError(_corrupt_split_message(b, split, err)) from None
  order = np.argsort(data["image_id"], kind="stable")
  out: dict[str, Any] = {}
  for key, value in data.items():
    if key == "image" and not images:
      continue
    value = value[order]
    if key in ("captions", "facts_json"):
      out[key] = [s.decode("utf-8") for s in value.reshape(-1)]
    else:
      out[key] = value
  return out


def corrupt_files(paths: list[str]) -> list[str]:
  """The TFRecord files among ``paths`` whose records fail their CRC (or end early)."""
  tf = import_tf()
  bad = []
  for path in paths:
    try:
      for _ in tf.data.TFRecordDataset(path):
        pass
    except (tf.errors.DataLossError, tf.errors.InvalidArgumentError):
      bad.append(path)
  return bad


def _check_split_files(b: tfds.core.DatasetBuilder, split: str) -> None:
  """Raises ``ValueError`` naming the first record file of ``split`` that is missing or
  empty (0 bytes), and how to rebuild it."""
  if split not in b.info.splits:
    return  # an unknown split: TFDS's own error lists the splits
  for path in map(str, b.info.splits[split].filepaths):
    if not paths.isfile(path):
      problem = "missing"
    elif paths.getsize(path) == 0:
      problem = "empty (0 bytes)"
    else:
      continue
    raise ValueError(
      f"{path}: TFRecord file of jitr_shapes/{b.builder_config.name} split {split!r} is "
      f"{problem}; delete {b.data_dir} and run again to rebuild it"
    )


def _corrupt_split_message(b: tfds.core.DatasetBuilder, split: str, err: Exception) -> str:
  """Names the corrupt file(s) of a split and how to rebuild them."""
  paths = [str(p) for p in b.info.splits[split].filepaths]
  bad = corrupt_files(paths) or paths
  detail = str(getattr(err, "message", err)).splitlines()[0]
  return (
    f"{', '.join(bad)}: corrupt TFRecord file of jitr_shapes/{b.builder_config.name} "
    f"split {split!r} ({detail}); delete {b.data_dir} and run again to rebuild it"
  )


def split_relevance(
  split: str, *, data_dir: str, config: str | ShapesConfig = "default"
) -> np.ndarray:
  """Exact relevance matrix of a built split: float32 ``[N_img, 5·N_img]``,
  entry ``[i, 5·j + k]`` = relevance of caption ``k`` of image ``j`` to image
  ``i`` (see :mod:`jitr.data.shapes.relevance`); ``[i, 5·i + k] == 1``."""
  data = load_split(split, data_dir=data_dir, config=config, images=False)
  facts = data["caption_facts"].reshape(-1, shapes_captions.FACT_FIELDS)
  return shapes_relevance.relevance_matrix(data["scene"], facts)
