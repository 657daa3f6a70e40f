"""Running systems: initialize_system, shutdown_system, the System record, rank queries."""
