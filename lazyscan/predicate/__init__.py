"""lazyscan.predicate."""
