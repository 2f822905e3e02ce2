"""lazyscan.io."""
