"""Versioned artifacts in the object store: the kinds (kinds.py) and the one store that publishes them (store.py)."""
