"""lazyscan.scan."""
