"""lazyscan.parquet."""
