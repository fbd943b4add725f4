"""The mail page: what the stack's mail sink (master/mailsink.py) kept under `<var>/mail/`, newest first, each
message's raw text at `mail/NAME.eml`.

Anonymous readers may look at it as at every other page (the mails tell what the pages already show: alerts,
failed builds). Nothing is cached (`no-store`): the list changes with every mail, and a mail may be removed. A
name that is not one the sink writes is a one-line 404, so nothing but the sink's files is ever served.
"""

from __future__ import annotations

import email.policy
import re
import time
from email.parser import BytesHeaderParser
from pathlib import Path
from typing import Any

from flask import Blueprint, Response, abort, render_template

from master import mailsink
from master.dashboard.context import current_farm

#: The names the sink writes: `<UTC timestamp>-<n>.eml`.
NAME = re.compile(r"[0-9]{8}T[0-9]{6}\.[0-9]{6}Z-[0-9]{1,9}\.eml")
#: The most mails the page lists, and the most bytes of each read for its headers.
MAX_LISTED, HEAD_BYTES = 500, 64 * 1024

bp = Blueprint("mail", __name__)


def _order(path: Path) -> tuple[str, int]:
    stamp, _, n = path.stem.rpartition("-")
    return stamp, int(n)


def _header(msg: Any, name: str) -> str:
    try:
        return " ".join(str(msg.get(name, "") or "").split())
    except Exception:  # a header the parser cannot decode is shown as missing, not as a 500
        return ""


def kept(where: Path) -> list[dict[str, Any]]:
    """The kept mails, newest first (at most MAX_LISTED): name, date, to, subject, size."""
    try:
        paths = [p for p in where.iterdir() if NAME.fullmatch(p.name)]
    except OSError:
        return []
    rows = []
    for path in sorted(paths, key=_order, reverse=True)[:MAX_LISTED]:
        try:
            with open(path, "rb") as f:
                head, size = f.read(HEAD_BYTES), path.stat().st_size
        except OSError:  # removed meanwhile
            continue
        msg = BytesHeaderParser(policy=email.policy.default).parsebytes(head)
        rows.append({"name": path.name, "size": size, "subject": _header(msg, "Subject") or "(no subject)",
                     "to": _header(msg, "To") or ", ".join(msg.get_all("Delivered-To") or []),
                     "date": _header(msg, "Date") or time.strftime("%Y-%m-%d %H:%M:%S UTC",
                                                                   time.strptime(path.name[:15], "%Y%m%dT%H%M%S"))})
    return rows


@bp.route("/mail/")
def mail_index() -> Response:
    s = current_farm().settings
    where = mailsink.mail_dir(s)
    resp = Response(render_template("mail.html", mails=kept(where), where=where, sink=mailsink.wanted(s),
                                    smtp=s.smtp, listed=MAX_LISTED))
    resp.headers["Cache-Control"] = "no-store"
    return resp


@bp.route("/mail/<name>")
def mail_raw(name: str) -> Response:
    path = mailsink.mail_dir(current_farm().settings) / name
    if not NAME.fullmatch(name) or not path.is_file():
        abort(404, description=f"no kept mail {name}")
    try:
        data = path.read_bytes()
    except OSError:
        abort(404, description=f"no kept mail {name}")
    return Response(data, content_type="text/plain; charset=utf-8", headers={"Cache-Control": "no-store"})
