"""Test support for geplug and for plugin authors.

``geplug.testing`` is an opt-in pytest plugin (``pytest -p geplug.testing`` or
``pytest_plugins = ["geplug.testing"]``); the hooks and fixtures live in
:mod:`geplug.testing.plugin`, which this module pulls in through ``pytest_plugins`` so that
importing ``geplug.testing`` itself needs no pytest (``check_product`` runs without it).
"""

pytest_plugins = ["geplug.testing.plugin"]
