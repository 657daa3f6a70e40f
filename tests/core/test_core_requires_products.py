"""The ``requires_products`` marker skips tests whose products are not installed."""

from __future__ import annotations

pytest_plugins = ["pytester"]


def test_requires_products_skips_when_a_product_is_missing(pytester) -> None:  # type: ignore[no-untyped-def]
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.geplug_requires_products("no_such_product_xyz")
        def test_needs_it():
            raise AssertionError("must not run")
        """
    )
    result = pytester.runpytest("-p", "geplug.testing")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["*1 skipped*"])
