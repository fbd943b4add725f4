"""Vocabulary role: Celery tasks that train, validate, publish and serve vocabularies."""
