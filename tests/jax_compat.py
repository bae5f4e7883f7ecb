"""Test helpers shared across packages."""

import functools

import jax


def install_jax_util_wraps() -> None:
  """Gives rax 0.4.0 the ``jax.util.wraps`` it calls (JAX 0.10 removed ``jax.util``).

  A public-API stand-in built on :func:`functools.wraps`: it copies the
  wrapped function's metadata and formats the name and docstring templates
  (``{fun}``, ``{doc}``) the way rax's decorators expect.
  """
  if hasattr(jax, "util") and hasattr(jax.util, "wraps"):
    return

  def wraps(wrapped, namestr=None, docstr=None, **kwargs):
    def decorator(fun):
      fun = functools.wraps(wrapped)(fun)
      name = getattr(wrapped, "__name__", repr(wrapped))
      doc = getattr(wrapped, "__doc__", "") or ""
      if namestr is not None:
        fun.__name__ = fun.__qualname__ = namestr.format(fun=name, doc=doc, **kwargs)
      if docstr is not None:
        fun.__doc__ = docstr.format(fun=name, doc=doc, **kwargs)
      return fun

    return decorator

  import types

  jax.util = types.SimpleNamespace(wraps=wraps)
