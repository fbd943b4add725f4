"""Run the lean launcher as a file: `python -I -S .../policyhost/cc_script.py ARGS` (see policyhost.cc).

Python compiles a file it runs as a script on every start, so this one stays tiny; the launcher
itself is imported from its cached bytecode.
"""

import os
import sys

if __name__ == "__main__":
    here = os.path.dirname(os.path.abspath(__file__))
    if sys.path and sys.path[0] == here:
        sys.path.pop(0)  # never import regression/*.py as top-level modules
    sys.path.insert(0, os.path.dirname(here))
    from policyhost.cc import main

    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)  # skips the interpreter's teardown, paid once per compile; every file is written and closed
