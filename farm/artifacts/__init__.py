"""Versioned artifacts (vocabularies, policies, datasets) over the object store (farm/objectstore.py).

One hop for a newcomer: `from farm.artifacts import VOCABULARIES` (or `POLICIES`, `DATASETS`, `handle(kind)`)
is a kind's handle (shelf.py) with publish, settle, promote, resolve, show, download and read_index. Below
it: the kinds' declarations (kinds.py), the versions' state machine and its writes (versions.py), the
gate's verdicts it records (verdict.py), the scrub of every published file (scrub.py), and fetching a
vocabulary or corpus by URL (remote.py, urlget.py). docs/artifacts.md draws the states and the keys.
"""

from farm.artifacts.shelf import DATASETS, POLICIES, VOCABULARIES, Shelf, handle

__all__ = ["DATASETS", "POLICIES", "VOCABULARIES", "Shelf", "handle"]
