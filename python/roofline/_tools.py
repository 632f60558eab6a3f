"""Where the package finds the programs built beside it (the CLI, roofline-gpu)."""

import os
import shutil

_HERE = os.path.dirname(os.path.abspath(__file__))

# In order: installed with the package (make python-install puts them in
# roofline/bin), the build tree (build/python/roofline -> build/bin), a whole
# install (P/lib/python3/dist-packages/roofline -> P/bin), then PATH.
_PLACES = (
    os.path.join(_HERE, "bin"),
    os.path.join(_HERE, "..", "..", "bin"),
    os.path.join(_HERE, "..", "..", "..", "..", "bin"),
)


def find_program(name):
    """The path of program `name`, or None where it is nowhere to be found."""
    for place in _PLACES:
        candidate = os.path.join(place, name)
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return os.path.normpath(candidate)
    return shutil.which(name)
