"""``python3 -m roofline ARGS`` runs the ``roofline`` command with ARGS.

The command is the one installed with the package (``make python-install``
puts it in roofline/bin), else the build tree's, else the one on PATH.
"""

import os
import sys

from ._tools import find_program


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    program = find_program("roofline")
    if program is None:
        sys.stderr.write("error: the roofline command was not found beside the Python module "
                         f"({os.path.dirname(os.path.abspath(__file__))}/bin) nor on PATH; "
                         "install both with `make python-install`\n")
        return 127
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(program, ["roofline", *argv])  # does not return


if __name__ == "__main__":
    sys.exit(main())
