"""`mlgo-farm master ...`, `mlgo-farm worker ...` and `mlgo-farm stack ...` verbs."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from farm.config import load_settings
from farm.errors import FarmError, InputError


def _master(args: argparse.Namespace) -> int:
    from master import control

    s = load_settings()
    if args.action == "create":
        print(control.create(s))
    elif args.action == "start":
        print(f"master running in {control.start(s)} at {control.url(s)}")
    elif args.action == "stop":
        print("master stopped" if control.stop(s) else "master was not running")
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
    from master import control
    from master.rest import MasterAPI

    s = load_settings()
    api = MasterAPI(args.url or control.url(s))
    props = _parse_props(args.property)
    before = api.last_buildid()
    for b in args.builders:
        print(f"forced {b}: buildset {api.force(b, props, reason=args.reason)}")
    if not args.wait:
        return 0
    api.wait_idle(args.timeout)
    return report(api, before)


def report(api, after_buildid: int) -> int:
    """Print every build after `after_buildid` (including triggered ones); 1 if any did not succeed."""
    results = api.builds_after(after_buildid)
    failed = [r for r in results if not r.ok]
    for r in results:
        print(f"{r.builder} #{r.number}: {r.result} ({r.state}) {r.url}")
        for name, res in r.steps:
            print(f"    {name}: {res}")
        for key, value in sorted(r.captured.items()):
            print(f"    => {key} = {value}")
    for r in failed:
        bad = [n for n, res in r.steps if res not in ("success", "warnings", "skipped")]
        if bad:
            print(f"--- {r.builder} #{r.number}, step {bad[0]} (last lines):", file=sys.stderr)
            print(api.step_log_tail(r.buildid, bad[0]), file=sys.stderr)
    if not results:
        raise FarmError("no build ran")
    return 1 if failed else 0


def _worker(args: argparse.Namespace) -> int:
    from master.layout import worker_dir
    from workers import buildbot_worker

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
        for line in stack.up(s):
            print(line)
    elif args.action == "down":
        for line in stack.down(s):
            print(line)
    else:
        for line in stack.status(s):
            print(line)
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    """Add the master, worker and stack verbs to `mlgo-farm`."""
    p = sub.add_parser("master", help="Buildbot master: create|start|stop|check, force builds")
    msub = p.add_subparsers(dest="master_verb", metavar="ACTION", required=True)
    for action, text in (("create", "create the master directory and SQLite database under var/"),
                         ("start", "start the master (idempotent)"), ("stop", "stop the master"),
                         ("check", "validate the registry against the CLI and run `buildbot checkconfig`")):
        msub.add_parser(action, help=text).set_defaults(func=_master, action=action)
    f = msub.add_parser("force", help="force builders through the REST API; --wait reports the results")
    f.add_argument("builders", nargs="+", metavar="BUILDER")
    f.add_argument("-p", "--property", action="append", default=[], metavar="NAME=VALUE")
    f.add_argument("--reason", default="forced from the command line")
    f.add_argument("--wait", action="store_true", help="wait for these and triggered builds; exit 1 if any failed")
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
    st.add_argument("action", choices=("up", "down", "status"))
    st.set_defaults(func=_stack)
