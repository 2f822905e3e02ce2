"""lazyscan.cli: the ``lazyscan`` command.

- :mod:`.main` — the subcommands (``scan``, ``explain``, ``inspect``, ``warmup``) and their
  arguments.
- :mod:`.describe` — what ``inspect`` says of a Delta Lake or Iceberg table's snapshot and of a
  plain folder's files, as JSON-ready data and as aligned text.
"""
