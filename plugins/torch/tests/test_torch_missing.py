"""Without PyTorch: geplug_torch imports, and any use says in one line what to install."""

from __future__ import annotations

import subprocess
import sys
import textwrap


def _run(code: str) -> subprocess.CompletedProcess[str]:
    # sys.modules["torch"] = None makes every `import torch` fail, as on a machine without it
    prelude = "import sys; sys.modules['torch'] = None\n"
    return subprocess.run([sys.executable, "-c", prelude + textwrap.dedent(code)],
                          capture_output=True, text=True, timeout=120)


def test_geplug_torch_imports_without_torch():
    r = _run("import geplug_torch, geplug_torch.profiler, geplug_torch.hooks; print('ok')")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "ok"


def test_backend_without_torch_says_what_to_install_in_one_line():
    r = _run("""
        import geplug_torch
        try:
            geplug_torch.backend(product="x")
        except geplug_torch.TorchMissingError as exc:
            print(str(exc))
    """)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.strip().splitlines()
    assert len(lines) == 1
    assert "pip install torch==2.13.0" in lines[0] and "geplug_torch.backend()" in lines[0]


def test_profiler_without_torch_says_what_to_install():
    r = _run("""
        from geplug_torch import profiler, TorchMissingError
        try:
            profiler.profile()
        except TorchMissingError as exc:
            print(str(exc))
    """)
    assert r.returncode == 0, r.stderr
    assert "pip install torch==2.13.0" in r.stdout


def test_torch_backend_passes_with_the_reason_when_torch_is_missing():
    r = _run("""
        from geplug_torch import hooks
        class S:
            reasons = {}
            def pass_reason(self, name, why):
                self.reasons[name] = why
        import importlib.util
        importlib.util.find_spec = lambda name, *a: None  # find_spec sees no torch either
        s = S()
        print(hooks.geplug_init_system(system=s), s.reasons["torch"])
    """)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("None PyTorch is not installed: pip install torch==2.13.0")


def test_no_package_the_readme_installs_depends_on_torch():
    """`pip install . ./plugins/*` must not pull torch: only geplug-torch's extra names it."""
    from pathlib import Path

    import pytest

    tomllib = pytest.importorskip("tomllib")  # Python 3.11+

    root = Path(__file__).resolve().parents[3]
    projects = [root / "pyproject.toml", *sorted(root.glob("plugins/*/pyproject.toml"))]
    assert len(projects) > 5
    for path in projects:
        project = tomllib.loads(path.read_text())["project"]
        names = [d.split(";")[0].strip().lower() for d in project.get("dependencies", [])]
        assert not [n for n in names if n.startswith(("torch", "torchvision"))], path
    extras = tomllib.loads((root / "plugins/torch/pyproject.toml").read_text())
    assert extras["project"]["optional-dependencies"]["torch"] == ["torch==2.13.0"]
