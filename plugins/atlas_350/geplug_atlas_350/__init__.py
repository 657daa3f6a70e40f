"""geplug product plugin: Atlas 350 accelerator card (Ascend 950 family)."""
