"""`mlgo-farm master ...`, `mlgo-farm worker ...` and `mlgo-farm stack ...` verbs."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from farm.config import load_settings
from farm.errors import InputError


def _master(args: argparse.Namespace) -> int:
    from master import control

    s = load_settings()
    if args.action == "create":
        print(control.create(s))
    elif args.action == "start":
        print(f"master running in {control.start(s)} at {control.url(s)}")
    elif args.action == "stop":
        print("master stopped" if control.stop(s) else "master was not running")
    elif args.action == "reconfig":
        control.reconfig(s)
        print("master reconfigured (master.cfg and the web users file reread)")
    elif args.action == "check":
        from master.verbcheck import check_registry

        problems = check_registry()
        if problems:
            raise InputError("registry: " + "; ".join(problems))
        print(control.check(s).strip() or "Config file is good!")
    return 0


def _parse_props(items: list[str]) -> dict[str, str]:
    props = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise InputError(f"property {item!r}: expected NAME=VALUE")
        props[key] = value
    return props


def _force(args: argparse.Namespace) -> int:
    from master.forcing import Progress, follow, form_fields, plan, report
    from master.rest import MasterAPI

    s = load_settings()
    api = MasterAPI.for_settings(s, url=args.url, user=args.user)
    props = _parse_props(args.property)
    # every builder's form first: a bad property is refused before anything is submitted
    per_builder = plan({b: form_fields(api.force_form(b)) for b in dict.fromkeys(args.builders)}, props)
    bsids = []
    for b, bprops in per_builder.items():
        bsids.append(api.force(b, bprops, reason=args.reason))
        print(f"forced {b}: buildset {bsids[-1]}")
    if not args.wait:
        return 0
    api.reconnect = s.buildbot.client_reconnect  # ride out a master restart (master/rest.py)
    return report(api, *follow(api, bsids, args.timeout, progress=Progress()), steps=False)


def _worker(args: argparse.Namespace) -> int:
    from master import buildbot_worker
    from master.layout import worker_dir

    s = load_settings()
    basedir = Path(args.basedir).absolute() if args.basedir else worker_dir(s, args.name)
    if args.action == "create":
        print(buildbot_worker.create(s, name=args.name, master=args.master, basedir=basedir))
    elif args.action == "start":
        buildbot_worker.start(s, basedir)
        print(f"worker running in {basedir}")
    elif args.action == "stop":
        print("worker stopped" if buildbot_worker.stop(s, basedir) else "worker was not running")
    return 0


def _stack(args: argparse.Namespace) -> int:
    from master import stack

    s = load_settings()
    if args.action == "up":
        for warning in stack.warnings(s):
            print(f"mlgo-farm: warning: {warning}", file=sys.stderr)
        for line in stack.up(s):
            print(line)
    elif args.action == "down":
        for line in stack.down(s):
            print(line)
    else:
        for line in stack.status(s):
            print(line)
    return 0


def registered_builders() -> set[str]:
    """The names of the registry's builders (what `regress history --builder` accepts before any run)."""
    from master.registry import REGISTRY

    return {b.name for b in REGISTRY}


def register(sub: argparse._SubParsersAction) -> None:
    """Add the master, worker and stack verbs to `mlgo-farm`."""
    import farm.cli

    farm.cli.registered_builders = registered_builders
    p = sub.add_parser("master", help="Buildbot master: create|start|stop|check, force builds")
    msub = p.add_subparsers(dest="master_verb", metavar="ACTION", required=True)
    for action, text in (("create", "create the master directory and SQLite database under var/"),
                         ("start", "start the master (idempotent)"), ("stop", "stop the master"),
                         ("reconfig", "make the running master reread its configuration and web users"),
                         ("check", "validate the registry against the CLI and run `buildbot checkconfig`")):
        msub.add_parser(action, help=text).set_defaults(func=_master, action=action)
    f = msub.add_parser("force", help="force builders through the REST API (logged in); --wait reports the results")
    f.add_argument("builders", nargs="+", metavar="BUILDER")
    f.add_argument("-p", "--property", action="append", default=[], metavar="NAME=VALUE",
                   help="a parameter of the builder's force form (a property no named builder declares is an error)")
    f.add_argument("--reason", default="forced from the command line")
    f.add_argument("--user", help="web login (default [buildbot] client_user, else admin_user); its password is "
                                  "[buildbot] client_password (MLGO_FARM_BUILDBOT_CLIENT_PASSWORD), else the "
                                  "admin's configured or generated one")
    f.add_argument("--wait", action="store_true",
                   help="follow exactly these buildsets and the builds they trigger, printing each step as it "
                        "ends; exit 1 if any failed, was merged into another request (SKIPPED) or was cancelled")
    f.add_argument("--timeout", type=float, default=3 * 3600, help="seconds to wait (default 3h)")
    f.add_argument("--url", help="master URL (default from [buildbot])")
    f.set_defaults(func=_force)

    w = sub.add_parser("worker", help="Buildbot worker on this host: create|start|stop")
    w.add_argument("action", choices=("create", "start", "stop"))
    w.add_argument("--name", help="worker name (default [buildbot] worker_name)")
    w.add_argument("--master", help="master HOST:PB_PORT (default [buildbot] master_host:pb_port)")
    w.add_argument("--basedir", help="worker directory (default var/buildbot/worker-NAME)")
    w.set_defaults(func=_worker)

    st = sub.add_parser("stack", help="single-machine stack: redis, Celery worker+beat, master, local worker")
    st.add_argument("action", choices=("up", "down", "status"),
                    help="up: start every service on 127.0.0.1 (idempotent; var/run holds their pids, var/log their "
                         "logs); down: stop them all, leaving nothing running; status: which are running, and where")
    st.set_defaults(func=_stack)
