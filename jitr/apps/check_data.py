"""jitr-check-data: whether a ``*_precomp`` folder is usable, before training on it.

  jitr-check-data --precomp_root=/data/precomp --dataset=f30k_precomp
  jitr-check-data --precomp_root=/data/precomp --dataset=iaprtc12_precomp
  jitr-check-data --precomp_root=/data/precomp --dataset=mine_precomp --captions_per_image=5

Prints one Markdown table, a row per split (images, feature rows and rows per image,
regions × dims, dtype, captions, the standard image count and whether it matches,
non-finite values), then the official loaders' behaviours that apply (the dev split cut
to 5,000 captions, features stored one row per caption). Exits 1 with one line naming
the first unusable file and what was expected. Flag parsing, then
:func:`jitr.data.check_precomp_folder`.
"""

from __future__ import annotations

from absl import flags

from jitr.apps._cli import App

APP = App("jitr-check-data", __name__, requires=("precomp_root", "dataset"))

_PRECOMP_ROOT = flags.DEFINE_string(
  "precomp_root",
  None,
  "Folder (or gs:// URL) holding the NAME_precomp/ folders (config.precomp_root).",
)
_DATASET = flags.DEFINE_string(
  "dataset",
  None,
  "Which folder of --precomp_root to check: f30k_precomp, coco_precomp, iaprtc12_precomp "
  "or any NAME_precomp (config.dataset).",
)
_CAPTIONS_PER_IMAGE = flags.DEFINE_integer(
  "captions_per_image",
  0,
  "Captions per image; 0: the dataset's own (5; IAPR TC-12: 1), required for another "
  "folder name (config.captions_per_image).",
  lower_bound=0,
)


def main() -> None:
  """Prints the check table of ``--dataset`` under ``--precomp_root``."""
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
