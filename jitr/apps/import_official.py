"""``jitr-import``: an official SGR, SAF, VSRN, CVSE or VSE∞ checkpoint and its vocabulary
become a jitr workdir that ``jitr-eval``, ``--ensemble`` and ``jitr-train
--config.init_from`` take (CVSE also needs its concept files: ``--config.concepts.source=DIR``;
VSE∞ the BERT folder it was trained from, ``--config.text.pretrained=DIR``, whose
``vocab.txt`` is its vocabulary: no ``--vocab``).

  jitr-import --config=configs/paper.py:f30k,sgr,triplet \\
      --checkpoint=runs/f30k_SGR/model_best.pth.tar --vocab=vocab/f30k_precomp_vocab.json \\
      --workdir=workdirs/official_sgr --config.precomp_root=/data

``--config`` is a training config of the same network and dataset (its data, loss and
optimizer serve a later fine-tuning); the model fields the weights fix come from the
checkpoint and must agree with the ``opt`` it saved. Exit status 0 with one line naming
the workdir (and a ``note:`` line for a legacy checkpoint without ``--sha256``, and one for
third-party inputs nothing verified); 1 with one line ``jitr-import: error: ...`` for a bad
checkpoint, vocabulary, config, a non-empty workdir or an input that is not the published
file (nothing written). Flag parsing, then
``jitr.experiment.official_import.import_official``.
"""

from __future__ import annotations

from absl import flags
from ml_collections import config_flags

from jitr.apps._cli import App, flag_inputs, loaded_config, workdir_flag

APP = App(
  "jitr-import",
  __name__,
  requires=("config", "checkpoint", "workdir"),
  inputs=flag_inputs("checkpoint", "vocab"),  # before the config fields that depend on them
)

_CONFIG = config_flags.DEFINE_config_file(
  "config", None, "Training config of the checkpoint's network and dataset (configs/*.py)."
)
_CHECKPOINT = flags.DEFINE_string(
  "checkpoint", None, "The official checkpoint (model_best.pth.tar, a torch.save file)."
)
_VOCAB = flags.DEFINE_string(
  "vocab",
  None,
  "Its official vocabulary: SGRAF's JSON or VSRN / VSE++'s vocab.pkl (VSE∞: none, the "
  "vocab.txt of --config.text.pretrained).",
)
_SHA256 = flags.DEFINE_string(
  "sha256",
  "",
  "The checkpoint's published SHA-256 (64 hex digits), checked before it is read: the only "
  "check a legacy (non-zip) torch.save file can have.",
)
_INPUT_SHA256 = flags.DEFINE_multi_string(
  "input_sha256",
  [],
  "FILE=SHA256: the published SHA-256 of another file the import reads (a BERT folder's "
  "weights, concept files jitr does not know), checked before anything is written and "
  "recorded in inputs.json; repeat the flag for more files.",
)
_WORKDIR = workdir_flag("The new workdir (absent or empty): a folder or a gs:// URL.")


def main() -> None:
  """Imports ``--checkpoint`` and ``--vocab`` into ``--workdir`` and prints one line."""
  config = loaded_config(_CONFIG)  # a file that did not load: before the imports
  # Imported here, not at the top: `jitr-import --help` answers without loading JAX.
  from jitr.experiment.official_import import UNVERIFIED, import_official
  from jitr.experiment.pinned_inputs import read_pins, unverified_note
  from jitr.training import reporting

  reporting.quiet_library_info_logs()
  record = import_official(
    config,
    _CHECKPOINT.value,
    _VOCAB.value,
    _WORKDIR.value,
    sha256=_SHA256.value,
    input_sha256=_INPUT_SHA256.value,
  )
  epoch = f" (epoch {record['epoch']})" if "epoch" in record else ""
  print(
    f"imported {record['network'].upper()}{epoch} from {record['checkpoint']} into "
    f"{_WORKDIR.value}; evaluate it with: jitr-eval --workdir={_WORKDIR.value}"
  )
  if record["verified"] == UNVERIFIED:
    print(
      f"note: {record['checkpoint']} is a legacy torch.save file, which carries no checksum: "
      f"its bytes were not verified (SHA-256 {record['sha256']}; pass --sha256 with the "
      "published one to check it)"
    )
  note = unverified_note(read_pins(_WORKDIR.value) or {})
  if note:
    print(note)


def run() -> None:
  """Console-script entry point."""
  APP.run(main)


if __name__ == "__main__":
  run()
