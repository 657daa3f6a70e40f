"""The ``geplug`` command line."""
