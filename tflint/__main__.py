import os
import sys

# `python -m tflint` puts the working directory first on sys.path, so a checked project's own `yaml.py`,
# `tomllib.py` or `difflib.py` would be imported (executed) in place of the real module. tflint never runs the
# code it reads: drop that entry unless tflint itself was found there (a checkout).
if sys.path and sys.path[0] in ("", os.getcwd()):
    _here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if os.path.abspath(sys.path[0] or ".") != _here:
        del sys.path[0]

from .cli import entry  # noqa: E402

entry()
