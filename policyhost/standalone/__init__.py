"""The policy host for people without the farm: one file, `mlgo_cc.py`, that needs only numpy and onnxruntime.

The dashboard serves it beside the policies (`policies/host/mlgo-cc.py` and its `.sha256`); it imports
nothing of the farm, so its flags and wire format are copies, which tests/policyhost/test_standalone.py
compares with policyhost/advisors.py, protocol.py, launcher.py and policies.py.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

#: the file users download, and the name it is served and saved under
SOURCE = Path(__file__).with_name("mlgo_cc.py")
SERVED_NAME = "mlgo-cc.py"
#: the one advisor it drives (its flags are the inliner's)
ADVISOR = "inline"


def source() -> bytes:
    return SOURCE.read_bytes()


def sha256_line() -> str:
    """The `sha256sum -c` line of the served file."""
    return f"{hashlib.sha256(source()).hexdigest()}  {SERVED_NAME}\n"
