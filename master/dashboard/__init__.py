"""The farm's own pages and read-only downloads inside the Buildbot web UI (a Buildbot WSGI dashboard)."""
