"""Files the app tests build or compare: a fake ``*_precomp`` folder, folder snapshots."""

from __future__ import annotations

import hashlib
import pathlib

import numpy as np

WORDS = ("a", "dog", "cat", "runs", "sits", "red", "blue", "on", "grass", "mat")


def write_precomp(root, n_images: int = 20, n_eval: int = 4) -> pathlib.Path:
  """``root/f30k_precomp`` with random ``{split}_ims.npy`` ``[n, 36, 2048]`` and 5 random
  captions of 3-7 words per image: ``n_images`` train images, ``n_eval`` dev and test."""
  folder = pathlib.Path(root) / "f30k_precomp"
  folder.mkdir(parents=True)
  rng = np.random.default_rng(0)
  for split, n in (("train", n_images), ("dev", n_eval), ("test", n_eval)):
    np.save(folder / f"{split}_ims.npy", rng.normal(size=(n, 36, 2048)).astype(np.float32))
    caps = [" ".join(rng.choice(WORDS, size=rng.integers(3, 8))) for _ in range(5 * n)]
    (folder / f"{split}_caps.txt").write_text("\n".join(caps) + "\n")
  return folder


def snapshot(root) -> dict[str, str]:
  """``{relative path: sha256}`` of every file under ``root``."""
  root = pathlib.Path(root)
  return {
    str(path.relative_to(root)): hashlib.sha256(path.read_bytes()).hexdigest()
    for path in sorted(root.rglob("*"))
    if path.is_file()
  }
