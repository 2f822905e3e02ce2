"""lazyscan.spark."""
