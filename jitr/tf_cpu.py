"""TensorFlow for input pipelines, kept off any accelerator and quiet on stderr, and loaded
after the native libraries that cannot be loaded after it."""

import importlib
import importlib.util
import os
import sys
import warnings

QUIET_TF_ENVIRONMENT = {"TF_CPP_MIN_LOG_LEVEL": "2", "TF_ENABLE_ONEDNN_OPTS": "0"}
"""Set (where unset) before TensorFlow's first import: no C++ INFO lines and no oneDNN notice
on stderr, where the apps print their one-line errors. oneDNN's custom operations only
speed up TensorFlow's own math, which jitr's input pipelines do not use."""

LOADED_BEFORE_TENSORFLOW = ("triton",)
"""Installed modules imported before TensorFlow's first import, because their native library
crashes the process when it is loaded after TensorFlow's.

``triton`` (which PyPI's CUDA build of PyTorch installs) and TensorFlow each link their own
copy of LLVM, of different versions, into ``libtriton.so`` and
``libtensorflow_framework.so.2``, and both export its symbols. TensorFlow loads its libraries
into the process's global symbol scope, so a ``libtriton.so`` loaded after it binds its
calls of LLVM functions to TensorFlow's copy, and its static initialisers crash on the other
version's data (SIGSEGV in ``llvm::DebugCounter``, from ``PassBuilder.cpp``). torch imports
triton on first use of ``torch._dynamo``, which transformers and sentence-transformers
import: loading a sentence model after a TFDS dataset crashed that way. Loaded first,
``libtriton.so`` binds its own symbols at load time (Python loads extension modules with
``RTLD_NOW | RTLD_LOCAL``) and stays invisible to TensorFlow's."""


def _installed(name: str) -> bool:
  """Whether the top-level module ``name`` can be imported (found without importing it)."""
  try:
    return importlib.util.find_spec(name) is not None
  except (ImportError, ValueError):
    return False


def load_before_tensorflow() -> list[str]:
  """Imports the installed modules of :data:`LOADED_BEFORE_TENSORFLOW` that are not loaded
  yet, if TensorFlow is not loaded yet; returns the names it imported. A module that fails
  to import is left to its own importer to report."""
  if "tensorflow" in sys.modules:
    return []
  loaded = []
  for name in LOADED_BEFORE_TENSORFLOW:
    if name in sys.modules or not _installed(name):
      continue
    try:
      importlib.import_module(name)
    except Exception:  # a broken install: torch reports it where it uses it
      continue
    loaded.append(name)
  return loaded


def hide_modules_tensorflow_breaks() -> list[str]:
  """When TensorFlow was loaded before an installed module of
  :data:`LOADED_BEFORE_TENSORFLOW` (by code other than :func:`import_tf`), makes that
  module's import raise ``ImportError`` (``sys.modules[name] = None``) instead of crashing
  the process, and warns once naming it; returns the names hidden. torch then runs without
  it (``torch.compile``'s GPU kernels are unavailable in this process). Call before
  importing torch-based libraries."""
  if "tensorflow" not in sys.modules:
    return []
  hidden = [n for n in LOADED_BEFORE_TENSORFLOW if n not in sys.modules and _installed(n)]
  for name in hidden:
    sys.modules[name] = None
    warnings.warn(
      f"{name} is installed but TensorFlow was imported before it, and {name}'s native "
      "library crashes the process when it is loaded after TensorFlow's: this process runs "
      f"without {name}. Import jitr.tf_cpu.import_tf (or {name}) before TensorFlow to keep it.",
      RuntimeWarning,
      stacklevel=2,
    )
  return hidden


def prepare_for_tensorflow() -> None:
  """What must happen before TensorFlow's first import, by jitr or a library (etils.epath
  imports it for a storage URL): :data:`QUIET_TF_ENVIRONMENT` fills the variables left
  unset and :func:`load_before_tensorflow` loads the modules that must come first. Nothing
  once TensorFlow is loaded."""
  if "tensorflow" not in sys.modules:
    for name, value in QUIET_TF_ENVIRONMENT.items():
      os.environ.setdefault(name, value)
    load_before_tensorflow()


def import_tf():
  """``tensorflow`` with GPUs hidden from it, so tf.data never takes accelerator memory,
  after :func:`prepare_for_tensorflow`."""
  prepare_for_tensorflow()
  import tensorflow as tf

  try:
    tf.config.set_visible_devices([], "GPU")
  except RuntimeError:  # devices already initialised by someone else
    pass
  return tf
