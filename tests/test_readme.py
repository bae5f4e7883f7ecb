"""The README's Python example runs as written."""

import pathlib
import re


def test_readme_python_example_runs():
  readme = (pathlib.Path(__file__).resolve().parents[1] / "README.md").read_text()
  blocks = re.findall(r"```python\n(.*?)```", readme, flags=re.S)
  assert blocks, "README has no python example"
  for block in blocks:
    exec(compile(block, "README.md", "exec"), {})
