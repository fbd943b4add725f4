"""The alert, the farm's most user-facing concept, from a run's end to its mail, in one folder.

records.py (Alert, AlertStore, the kinds and states: what an alert is and who may change it), outbox.py (the mails
queued on the database layer's transaction), mailtext.py (what an alert mail says), delivery.py (claim, send and
retry on Celery beat's pass), lifecycle.py (when a run opens, groups, improves or recovers an alert, and queues its
mail inside the run's own transaction) and verbs.py (`regress alert`, `regress alerts`, `regress bisect`).
"""
