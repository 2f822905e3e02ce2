"""lazyscan.tables: a table's snapshot planned into the data files the scan reads.

- :mod:`.plan` what every plan gives the scan, whatever the format: per data file a
  :class:`~lazyscan.tables.plan.FileRead` (columns by field id or name, constants, deleted
  positions, equality deletes, statistics), the :class:`~lazyscan.tables.plan.PlannedTable` shape;
- :mod:`.delta` Delta Lake: the snapshot's files, partition values, statistics, column mapping
  and decoded deletion vectors (:func:`plan_delta`, :class:`TablePlan`);
- :mod:`.iceberg` Apache Iceberg: the snapshot's data files pruned by pyiceberg, position deletes
  and deletion vectors as sorted row positions, equality deletes per file, columns by field id,
  re-rooting, tables on object stores read through the scan's filesystem (:func:`plan_iceberg`,
  :class:`IcebergPlan`, :func:`resolve_columns`, :func:`verify_files`).

A plan holds no open files and pickles small (deleted row positions as narrow gaps), so a
driver plans once and ships it to tasks.
``deltalake`` and ``pyiceberg`` are optional (``pip install 'lazyscan[tables]'``) and imported
only when a table is planned.
"""
