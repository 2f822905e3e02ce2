"""lazyscan.cli."""
