"""geplug product plugin: Atlas inference series (310P) and Atlas 200I/500 A2 (310B)."""
