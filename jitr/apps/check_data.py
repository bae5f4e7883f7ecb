"""jitr-check-data: whether a ``*_precomp`` folder or an image folder is usable, before
training on it.

  jitr-check-data --precomp_root=/data/precomp --dataset=f30k_precomp
  jitr-check-data --precomp_root=/data/precomp --dataset=iaprtc12_precomp
  jitr-check-data --precomp_root=/data/precomp --dataset=mine_precomp --captions_per_image=5
  jitr-check-data --dataset=f30k_images --karpathy_json=flickr30k/dataset_flickr30k.json \
    --images=flickr30k/flickr30k-images

Prints one Markdown table, a row per split (images, feature rows and rows per image,
regions × dims, dtype, captions, the standard image count and whether it matches,
non-finite values), then the official loaders' behaviours that apply (the dev split cut
to 5,000 captions, features stored one row per caption). Exits 1 with one line naming
the first unusable file and what was expected. An image folder (``NAME_images``): a table
of its splits (images, captions, captions per image), then every missing or unreadable
image and every image with too few captions, one line each on stderr, and exit 1 if there
is any. Flag parsing, then :func:`jitr.data.check_precomp_folder` or
:func:`jitr.data.check_image_folder`.
"""

from __future__ import annotations

import sys

from absl import flags

from jitr.apps._cli import App

APP = App("jitr-check-data", __name__, requires=("dataset",))

_PRECOMP_ROOT = flags.DEFINE_string(
  "precomp_root",
  None,
  "Folder (or gs:// URL) holding the NAME_precomp/ folders (config.precomp_root).",
)
_DATASET = flags.DEFINE_string(
  "dataset",
  None,
  "Which folder of --precomp_root to check: f30k_precomp, coco_precomp, iaprtc12_precomp "
  "or any NAME_precomp (config.dataset); or an image folder, f30k_images, coco_images or "
  "any NAME_images, with --karpathy_json and --images.",
)
_KARPATHY_JSON = flags.DEFINE_string(
  "karpathy_json", None, "An image folder's Karpathy split file (config.karpathy.json)."
)
_IMAGES = flags.DEFINE_string("images", None, "The folder of its images (config.karpathy.images).")
_CAPTIONS_PER_IMAGE = flags.DEFINE_integer(
  "captions_per_image",
  0,
  "Captions per image; 0: the dataset's own (5; IAPR TC-12: 1), required for another "
  "folder name (config.captions_per_image).",
  lower_bound=0,
)


def check_images() -> None:
  """Prints the check of the image folder; each problem one line on stderr, exit 1."""
  from jitr.data.image_folder_check import check_image_folder, format_folder_check

  for flag in (_KARPATHY_JSON, _IMAGES):
    if not flag.value:
      raise ValueError(f"--{flag.name}: required for the image folder {_DATASET.value}")
  check = check_image_folder(_KARPATHY_JSON.value, _IMAGES.value, _CAPTIONS_PER_IMAGE.value or 5)
  print(format_folder_check(check))
  for line in check.problems:
    sys.stderr.write(f"{APP.name}: {line}\n")
  if check.problems:
    raise SystemExit(1)


def main() -> None:
  """Prints the check table of ``--dataset`` under ``--precomp_root`` (or of the image
  folder)."""
  from jitr.data.datasets import dataset_info

  if dataset_info(_DATASET.value).pixels:
    check_images()
    return
  if not _PRECOMP_ROOT.value:
    raise ValueError(f"--precomp_root: required for the precomp folder {_DATASET.value}")
  # Imported here, not at the top: `jitr-check-data --help` answers without loading JAX.
  from jitr.data.precomp_check import check_precomp_folder, format_check_report

  checks = check_precomp_folder(
    _PRECOMP_ROOT.value, _DATASET.value, captions_per_image=_CAPTIONS_PER_IMAGE.value
  )
  print(format_check_report(checks))


def run() -> None:
  """Console-script entry point."""
  APP.run(main)


if __name__ == "__main__":
  run()
