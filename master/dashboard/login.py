"""Who is logged in, for the dashboard's one kind of write (an alert's state): Buildbot's own login and authz.

The dashboard runs inside the master (buildbot_wsgi_dashboards), which gives it no request object, only the
WSGI environ. A browser that logged in at Buildbot's `/auth/login` carries Buildbot's session cookie
(`TWISTED_SESSION`, `TWISTED_SECURE_SESSION` over HTTPS): a JWT signed with the master's session secret, holding
the user's info. `BuildbotLogin` checks that token with Buildbot's own code and the master's secret, then asks the
master's configured authz (master/buildmaster.py, `web_access`) for the user's roles: the same login, the same
`operator` role that forcing a build needs. Anything else (no cookie, a forged or expired token, an anonymous
session, a user without the role) is nobody, and the page answers 403.

Served without a master (tests, `werkzeug`), there is no login at all: every write is refused.
"""

from __future__ import annotations

from http.cookies import CookieError, SimpleCookie
from typing import Any

#: The role a change of an alert's state needs (master/buildmaster.py gives every web login this role).
ROLE = "operator"
COOKIES = ("TWISTED_SESSION", "TWISTED_SECURE_SESSION")


class BuildbotLogin:
    """`login(environ)`: the logged-in operator's name, or None. Made from the plugin's API object (mount.py)."""

    def __init__(self, api: Any) -> None:
        self.api = api

    def __call__(self, environ: dict[str, Any]) -> str | None:
        from buildbot.www.auth import parse_user_info_from_token

        master = getattr(self.api, "master", None)
        www = getattr(master, "www", None)
        site, authz = getattr(www, "site", None), getattr(www, "authz", None)
        secret = getattr(site, "session_secret", None)
        if not secret or authz is None:
            return None
        try:
            cookies = SimpleCookie(environ.get("HTTP_COOKIE", ""))
        except CookieError:
            return None
        for name in COOKIES:
            if name not in cookies:
                continue
            try:
                info = parse_user_info_from_token(cookies[name].value, secret)
            except KeyError:  # a bad signature, an expired or malformed token
                continue
            user = info.get("username") if isinstance(info, dict) and not info.get("anonymous") else None
            if isinstance(user, str) and user and ROLE in authz.getRolesFromUser(info):
                return user
        return None
