"""Built-in profiling support."""
