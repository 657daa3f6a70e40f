"""tox-geplug: one tox environment per simulated Ascend product declared in ``geplug_products``."""
