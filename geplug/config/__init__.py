"""Session options: the typed model, reading every form, checking, resolving, exporting."""
