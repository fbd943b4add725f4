"""Buildbot master role: builder registry (data), factories, schedulers, reporters."""
