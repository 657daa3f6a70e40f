"""geplug product plugin: Atlas A3 training/inference series (Ascend910_93*)."""
