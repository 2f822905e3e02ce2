"""lazyscan.cli: the ``lazyscan`` command.

- :mod:`.main` — the subcommands (``scan``, ``explain``, ``inspect``, ``warmup``) and their
  arguments.
"""
