"""geplug product plugin: Atlas A2 training/inference series (Ascend910B*)."""
