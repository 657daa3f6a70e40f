"""Test support for geplug and for plugin authors (a pytest plugin: ``geplug.testing.plugin``)."""
