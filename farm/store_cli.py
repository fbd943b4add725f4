"""`mlgo-farm store verify`: the operators' scrub of the object store (farm/artifacts/scrub.py).

Every bad object is one line on stdout as it is found; then, if there was any, the one-line error of the
store's kind on stderr and exit 4 (farm/errors.py), so `mlgo-farm store verify || mail ...` in a cron job
or a monitoring check needs nothing else. A clean store prints one line of what was checked and exits 0.
"""

from __future__ import annotations

import argparse

from farm.errors import StoreError


def _verify(args: argparse.Namespace) -> int:
    from farm.artifacts import scrub
    from farm.objectstore import CorruptObject, store_from_settings

    store = store_from_settings()
    found = scrub.verify(store, lambda line: print(line, flush=True))
    if found.bad:
        raise CorruptObject(f"{len(found.bad)} bad object(s) in {store.url}, listed above ({found.objects} "
                            f"objects of {found.versions} published versions checked)")
    print(f"{store.url}: {found.objects} objects of {found.versions} published versions match their manifests")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("store", help="the object store: verify every published file against its manifest")
    ssub = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    v = ssub.add_parser("verify", help="read every file of every published version (vocabularies, policies, "
                                       "datasets) and check it against its manifest's sha256: one line per bad "
                                       f"object, exit {StoreError.exit_code} if there is any")
    v.set_defaults(func=_verify)
