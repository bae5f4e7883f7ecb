"""jitr-check-data: whether a ``*_precomp`` folder is usable, before training on it.

  jitr-check-data --precomp_root=/data/precomp --dataset=f30k_precomp

Prints one Markdown table, a row per split (images, feature rows and rows per image,
regions × dims, dtype, captions, the standard image count and whether it matches,
non-finite values), then the official loaders' behaviours that apply (the dev split cut
to 5,000 captions, features stored one row per caption). Exits 1 with one line naming
the first unusable file and what was expected. Flag parsing, then
:func:`jitr.data.check_precomp_folder`.
"""

from __future__ import annotations

from absl import app, flags

from jitr.apps._cli import run_app, run_reporting_bad_input

NAME = "jitr-check-data"

_PRECOMP_ROOT = flags.DEFINE_string(
  "precomp_root",
  None,
  "Folder (or gs:// URL) holding f30k_precomp/ and coco_precomp/ (config.precomp_root).",
)
_DATASET = flags.DEFINE_enum(
  "dataset", None, ["f30k_precomp", "coco_precomp"], "Which folder of --precomp_root to check."
)


def main(argv: list[str]) -> None:
  if len(argv) > 1:
    raise app.UsageError(f"unexpected arguments: {argv[1:]}")
  # Imported here, not at the top: `jitr-check-data --help` answers without loading JAX.
  from jitr.data.precomp_check import check_precomp_folder, format_check_report

  checks = run_reporting_bad_input(  # bad input: one clear line, exit code 1
    NAME, lambda: check_precomp_folder(_PRECOMP_ROOT.value, _DATASET.value)
  )
  print(format_check_report(checks))


def run() -> None:
  """Console-script entry point."""
  flags.mark_flags_as_required(["precomp_root", "dataset"])
  run_app(__name__, main)


if __name__ == "__main__":
  run()
