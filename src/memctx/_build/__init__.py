"""The build: :class:`ContextBuilder` and its stages, one module each.

``builder`` runs them in order: ``options`` (validate), ``cache`` (this history's
memory), ``filter``, ``pin``, ``cost``, ``select`` (one ``select_*`` module per
strategy), ``group`` and ``report``; ``incremental`` resumes a walk after an append,
``compressed`` builds with compressors, ``turns`` counts the turns adapters add.
"""
