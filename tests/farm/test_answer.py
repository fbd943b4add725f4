"""`--json` (farm/answer.py): one object on stdout whatever the verb and its child processes print meanwhile."""

from __future__ import annotations

import json
import subprocess
import sys

from farm.answer import Answer, emit

#: A verb's run under --json as farm/cli.py does it: Python prints and a child process writes to fd 1.
SCRIPT = """
import subprocess, sys
from farm.answer import Answer, emit, json_stdout
with json_stdout() as out:
    print("progress from Python")
    subprocess.run(["sh", "-c", "echo progress from a child; echo more >&1"], check=True)
    emit(Answer({"n": 1, "path": "/x"}, lambda f: f"{f['n']} at {f['path']}"), True, out)
print("stdout is back")
"""


def test_under_json_stdout_holds_the_object_and_everything_else_goes_to_stderr() -> None:
    p = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=60, check=True)
    first, rest = p.stdout.split("\n", 1)
    assert json.loads(first) == {"n": 1, "path": "/x", "exit_code": 0}
    assert rest == "stdout is back\n"
    assert "progress from Python\n" in p.stderr and "progress from a child\nmore\n" in p.stderr


def test_the_sentence_and_the_object_come_from_the_same_fields(capsys) -> None:
    a = Answer({"n": 3, "what": "modules"}, lambda f: f"{f['n']} {f['what']}", exit_code=10)
    assert emit(a, False) == 10 and capsys.readouterr().out == "3 modules\n"
    assert emit(a, True) == 10
    said = capsys.readouterr()
    assert json.loads(said.out) == {"n": 3, "what": "modules", "exit_code": 10} and said.err == "3 modules\n"
