"""geplug example product plugin: a fictional Atlas A2 variant card (data only)."""
