"""What the config files share: :func:`parse_arg`, the parser of their argument strings.

``--config=configs/FILE.py:ARG`` hands ``ARG`` to ``FILE.get_config``; a config file
declares what it takes and parses it in one call (big_vision's ``configs/common.py``
style)::

  arg = common.parse_arg(
    spec,
    config="configs/shapes.py",
    name=common.choices(*VARIANTS),
    model=common.choices(*MODELS, default="vse"),
  )
  arg.name, arg.model

ARG is comma-separated values, positional in the declared order (``triplet,sgr``) or
``key=value`` (``triplet,model=sgr``). A bad ARG is refused with one line naming the
config file, the expected form and the valid values:
``configs/shapes.py: expected NAME[,MODEL] with NAME one of (...) and MODEL one of (...);
got 'tripplet'``.

Not a config file itself (no ``get_config``); a config file loads it by path (jitr-train
reads config files from any directory, so ``configs`` need not be importable), an
installed jitr as ``jitr.configs.common``.
"""

import dataclasses
import types
from typing import Any

_REQUIRED = object()  # a field without a default: ARG must give it


@dataclasses.dataclass(frozen=True)
class Field:
  """One field of an argument string: its valid values (empty: any value of the default's
  type) and its default (:data:`_REQUIRED` when ARG must give it)."""

  values: tuple[Any, ...] = ()
  default: Any = _REQUIRED

  @property
  def required(self) -> bool:
    return self.default is _REQUIRED


def choices(*values: str, default: Any = _REQUIRED) -> Field:
  """A field taking one of ``values`` (``default`` when ARG leaves it out)."""
  return Field(tuple(values), default)


def _field(spec: Any) -> Field:
  """A :class:`Field`, or a plain default (any value of its type; ``bool`` takes
  ``True`` / ``False``)."""
  return spec if isinstance(spec, Field) else Field((), spec)


def _convert(text: str, field: Field) -> Any:
  """``text`` as the field's value; raises ``ValueError`` when it is not one."""
  if field.values:
    if text not in field.values:
      raise ValueError(text)
    return text
  kind = type(field.default)
  if kind is bool:
    if text not in ("True", "False"):
      raise ValueError(text)
    return text == "True"
  return kind(text) if field.default is not None else text


def _describe(name: str, field: Field) -> str:
  if field.values:
    return f"{name.upper()} one of {tuple(field.values)}"
  kinds = {bool: "True or False", int: "a whole number", float: "a number"}
  return f"{name.upper()} {kinds.get(type(field.default), 'a string')}"


def expected_form(**spec: Any) -> str:
  """``NAME[,MODEL] with NAME one of (...) and MODEL one of (...)``: what ARG may be."""
  fields = {name: _field(s) for name, s in spec.items()}
  form = ""
  for i, (name, field) in enumerate(fields.items()):
    part = ("," if i else "") + name.upper()
    form += part if field.required else f"[{part}]"
  said = [_describe(name, field) for name, field in fields.items()]
  names = said[0] if len(said) == 1 else ", ".join(said[:-1]) + " and " + said[-1]
  return f"{form} with {names}"


def parse_arg(arg: str | None, *, config: str, **spec: Any) -> types.SimpleNamespace:
  """The fields of ``arg`` (``v1,v2,key=v3``) as attributes, each declared in ``spec``
  (in positional order) as :func:`choices` or a plain default; fields ``arg`` leaves out
  take their defaults.

  Raises:
    ValueError: ``CONFIG: expected FORM with NAMES; got 'ARG'`` (one line) for a value
      that is not a valid one, a required field left out, too many values, an unknown
      key, a key given twice or an empty part.
  """
  fields = {name: _field(s) for name, s in spec.items()}
  error = ValueError(f"{config}: expected {expected_form(**spec)}; got {arg!r}")
  values: dict[str, Any] = {}
  positional = list(fields)
  parts = arg.split(",") if arg else []
  for i, part in enumerate(parts):
    key, sep, text = part.partition("=")
    if not sep:
      if i >= len(positional) or values.keys() - set(positional[:i]):
        raise error  # more values than fields, or a positional value after a key=value
      key, text = positional[i], part
    if key not in fields or key in values or not text:
      raise error
    try:
      values[key] = _convert(text, fields[key])
    except ValueError:
      raise error from None
  for name, field in fields.items():
    if name not in values:
      if field.required:
        raise error
      values[name] = field.default
  return types.SimpleNamespace(**values)
