"""geplug product plugin: Atlas training series (Ascend910*)."""
