"""The hostile-plugin matrix: a third-party plugin misbehaving in each hook.

Each test installs one fake distribution (``fake-hostile 1.0``, plugin ``hostile``) next to
every real plugin, runs the CLI in-process, and checks that the other products stay usable,
JSON output stays valid, and the message names the plugin, its distribution and the hook.
"""

from __future__ import annotations

import json
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from geplug.cli.main import main
from geplug.plugin import reset_manager

pytest.importorskip("geplug_simulator")
onnx = pytest.importorskip("onnx")

pytestmark = pytest.mark.geplug_requires_products("atlas_a2", "atlas_train")

NAMED = ("'hostile'", "fake-hostile 1.0")
"""What every message about the hostile plugin names (plus the hook)."""


def _model() -> Any:
    from onnx import TensorProto, helper, numpy_helper

    w = numpy_helper.from_array(np.linspace(-1, 1, 32, dtype=np.float32).reshape(8, 4), "w")
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["h"], name="fc"),
         helper.make_node("Relu", ["h"], ["y"], name="relu")],
        "tiny", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])], [w])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


@pytest.fixture
def model(tmp_path: Path) -> str:
    path = tmp_path / "tiny.onnx"
    onnx.save(_model(), str(path))
    return str(path)


@pytest.fixture
def install(geplug_fake_distribution: Callable[..., Path]) -> Iterator[Callable[[str], None]]:
    """``install(body)``: the ``hostile`` plugin with ``body`` as its hooks (after the
    imports), loaded by the next CLI command."""

    def put(body: str) -> None:
        head = "import sys\nfrom geplug import hookimpl\nGEPLUG_PLUGIN_API = 1\n"
        geplug_fake_distribution(
            "fake-hostile", version="1.0", entry_points={"hostile": "hostileplug.hooks"},
            files={"hostileplug/__init__.py": "",
                   "hostileplug/hooks.py": head + textwrap.dedent(body)})
        reset_manager(None)

    reset_manager(None)
    yield put
    reset_manager(None)


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    reset_manager(None)
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _names_plugin(err: str, hook: str) -> bool:
    lines = [line for line in err.splitlines() if all(n in line for n in NAMED)]
    return any(hook in line for line in lines)


def _products_json(capsys: pytest.CaptureFixture[str]) -> tuple[list[str], str]:
    _, out, err = _cli(capsys, "products", "--json")
    return [p["name"] for p in json.loads(out)], err


# -- geplug_capabilities ---------------------------------------------------------------


@pytest.mark.parametrize("body", [
    "@hookimpl\ndef geplug_capabilities():\n    raise RuntimeError('boom')\n",
    "@hookimpl\ndef geplug_capabilities():\n    return 42\n",
    "@hookimpl\ndef geplug_capabilities():\n    return ['not a declaration']\n",
    "@hookimpl\ndef geplug_capabilities():\n    sys.exit(3)\n",
], ids=["raises", "returns-int", "returns-junk-items", "sys-exit"])
def test_a_broken_capabilities_hook_leaves_every_other_product_listed(
        install, capsys, body: str) -> None:
    install(body)
    names, err = _products_json(capsys)
    assert {"atlas_a2", "atlas_train"} <= set(names)
    assert _names_plugin(err, "geplug_capabilities")


# -- import ----------------------------------------------------------------------------


@pytest.mark.parametrize("body", ["raise SystemExit(2)\n", "raise KeyboardInterrupt\n"],
                         ids=["SystemExit", "KeyboardInterrupt"])
def test_a_plugin_ending_the_process_at_import_is_skipped_and_named(
        install, capsys, body: str) -> None:
    install(body)
    names, err = _products_json(capsys)
    assert {"atlas_a2", "atlas_train"} <= set(names)
    assert _names_plugin(err, "failed to import") and body.split("(")[0].split()[1] in err


def test_a_keyboard_interrupt_at_import_is_the_plugins_where_sigint_is_ignored(
        install, capsys, monkeypatch) -> None:
    """A background job of a non-interactive shell (nohup, CI runners) starts with SIGINT
    ignored: Python installs no handler, so geplug cannot count interrupts, but no Ctrl-C
    can arrive either: the interrupt is the plugin's, and the plugin is skipped."""
    import signal

    from geplug.plugin import guard

    monkeypatch.setattr(guard, "_installed", False)
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        install("raise KeyboardInterrupt\n")
        names, err = _products_json(capsys)
    finally:
        signal.signal(signal.SIGINT, previous)
    assert {"atlas_a2", "atlas_train"} <= set(names)
    assert _names_plugin(err, "failed to import") and "KeyboardInterrupt" in err


# -- printing --------------------------------------------------------------------------

PRINTING = """\
print("printed at import")
@hookimpl
def geplug_capabilities():
    print("printed in capabilities")
    return []
@hookimpl(tryfirst=True)
def geplug_init_system(system):
    print("printed in init_system")
@hookimpl(tryfirst=True)
def geplug_compile(system, model, options):
    print("printed in compile")
@hookimpl
def geplug_dump(event):
    print("printed in dump")
@hookimpl
def geplug_shutdown_system(system):
    print("printed in shutdown")
"""


def test_what_a_plugin_prints_does_not_corrupt_products_json(install, capsys) -> None:
    install(PRINTING)
    names, err = _products_json(capsys)
    assert "atlas_a2" in names and "printed at import" in err


def test_what_a_plugin_prints_does_not_corrupt_compile_json(install, capsys, model) -> None:
    install(PRINTING)
    code, out, err = _cli(capsys, "compile", model, "--product", "atlas_a2", "--format", "json")
    assert code == 0
    assert json.loads(out)["product"] == "atlas_a2"
    assert "printed in compile" in err and "printed in shutdown" in err


# -- backend hooks ---------------------------------------------------------------------


@pytest.mark.parametrize(("hook", "body"), [
    ("geplug_init_system", "@hookimpl(tryfirst=True)\ndef geplug_init_system(system):\n"
                           "    raise RuntimeError('no device')\n"),
    ("geplug_init_system", "@hookimpl(tryfirst=True)\ndef geplug_init_system(system):\n"
                           "    return 'a runtime, honest'\n"),
    ("geplug_init_system", "@hookimpl(tryfirst=True)\ndef geplug_init_system(system):\n"
                           "    raise KeyboardInterrupt\n"),
    ("geplug_compile", "@hookimpl(tryfirst=True)\ndef geplug_compile(system, model, options):\n"
                       "    raise ValueError('cannot compile')\n"),
    ("geplug_compile", "@hookimpl(tryfirst=True)\ndef geplug_compile(system, model, options):\n"
                       "    return {'compiled': True}\n"),
    ("geplug_compile", "@hookimpl(tryfirst=True)\ndef geplug_compile(system, model, options):\n"
                       "    sys.exit(1)\n"),
    ("geplug_shutdown_system", "@hookimpl\ndef geplug_shutdown_system(system):\n"
                               "    raise OSError('disk gone')\n"),
    ("geplug_shutdown_system", "@hookimpl\ndef geplug_shutdown_system(system):\n"
                               "    sys.exit(0)\n"),
], ids=["init-raises", "init-returns-str", "init-keyboardinterrupt", "compile-raises",
        "compile-returns-dict", "compile-sys-exit", "shutdown-raises", "shutdown-sys-exit"])
def test_a_broken_backend_hook_leaves_the_run_to_the_next_backend(
        install, capsys, model, hook: str, body: str) -> None:
    install(body)
    code, out, err = _cli(capsys, "run", model, "--product", "atlas_a2")
    assert code == 0, err
    assert "tiny on atlas_a2: 1 step(s)" in out
    assert _names_plugin(err, hook)
    assert "Traceback" not in err


# -- dump and profiling ----------------------------------------------------------------


def _dump_files(root: Path) -> dict[str, bytes]:
    """Every dump file under ``root``, keyed by its path below the time-stamped folder."""
    return {str(Path(*p.relative_to(root).parts[1:])): p.read_bytes()
            for p in sorted(root.rglob("*")) if p.is_file()}


def _dump_run(capsys, model: str, tmp_path: Path, name: str,
              monkeypatch: pytest.MonkeyPatch) -> tuple[dict[str, bytes], str]:
    import geplug_simulator.emit as emit

    monkeypatch.setattr(emit, "time", type("Clock", (), {"time": staticmethod(lambda: 1.7e9)}))
    root = tmp_path / name
    root.mkdir()
    cfg = tmp_path / f"{name}.toml"
    cfg.write_text(f'enable_dump = true\ndump_mode = "all"\ndump_path = "{root.as_posix()}"\n')
    code, _, err = _cli(capsys, "run", model, "--product", "atlas_a2", "--config", str(cfg))
    assert code == 0, err
    return _dump_files(root), err


@pytest.mark.parametrize(("label", "body"), [
    ("writes-into-arrays", "@hookimpl\ndef geplug_dump(event):\n"
                           "    for t in event.outputs:\n        t.array[...] = 0\n"),
    ("raises", "@hookimpl\ndef geplug_dump(event):\n    raise RuntimeError('boom')\n"),
    ("returns-junk", "@hookimpl\ndef geplug_dump(event):\n    return 42\n"),
], ids=["writes-into-arrays", "raises", "returns-junk"])
def test_a_hostile_dump_plugin_leaves_geplugs_dump_files_byte_identical(
        install, capsys, model, tmp_path, monkeypatch, label: str, body: str) -> None:
    clean, _ = _dump_run(capsys, model, tmp_path, "clean", monkeypatch)
    install(body)
    hostile, err = _dump_run(capsys, model, tmp_path, "hostile", monkeypatch)
    assert clean and hostile == clean
    assert _names_plugin(err, "geplug_dump")


def test_a_raising_profile_plugin_leaves_profiling_output_complete(
        install, capsys, model, tmp_path) -> None:
    install("@hookimpl\ndef geplug_profile(event):\n    raise RuntimeError('boom')\n")
    out_dir = tmp_path / "prof"
    opts = json.dumps({"output": str(out_dir), "task_time": "on"})
    cfg = tmp_path / "p.toml"
    cfg.write_text(f"profiling_mode = true\nprofiling_options = '{opts}'\n")
    code, _, err = _cli(capsys, "run", model, "--product", "atlas_a2", "--config", str(cfg))
    assert code == 0, err
    assert _names_plugin(err, "geplug_profile")
    assert list(out_dir.rglob("op_summary_*.csv"))


# -- a product declared twice ----------------------------------------------------------

REDECLARE = """\
from importlib.resources import files
from geplug.products import declare
@hookimpl
def geplug_capabilities():
    return [declare(files("hostileplug") / "capabilities.toml")]
"""


@pytest.fixture
def redeclared(geplug_fake_distribution, tmp_path) -> Iterator[None]:
    """``hostile`` re-declares atlas_a2 (a copy of the real declaration)."""
    from importlib.resources import files

    toml = (files("geplug_atlas_a2") / "capabilities.toml").read_text(encoding="utf-8")
    geplug_fake_distribution(
        "fake-hostile", version="1.0", entry_points={"hostile": "hostileplug.hooks"},
        files={"hostileplug/__init__.py": "", "hostileplug/capabilities.toml": toml,
               "hostileplug/hooks.py": "from geplug import hookimpl\nGEPLUG_PLUGIN_API = 1\n"
                                       + REDECLARE})
    reset_manager(None)
    yield
    reset_manager(None)


def test_a_redeclared_product_is_one_error_naming_both_distributions(
        redeclared, capsys) -> None:
    code, out, err = _cli(capsys, "products", "--json")
    names = [p["name"] for p in json.loads(out)]
    assert code == 1 and "atlas_train" in names and "atlas_a2" not in names
    errors = [line for line in err.splitlines() if "error" in line]
    assert len(errors) == 1
    assert "fake-hostile 1.0" in errors[0] and "geplug-atlas-a2" in errors[0]


def test_every_other_product_runs_beside_a_redeclared_one(redeclared, capsys, model) -> None:
    code, out, err = _cli(capsys, "run", model, "--product", "atlas_train")
    assert code == 0, err
    assert "tiny on atlas_train" in out


def test_asking_for_the_redeclared_product_names_both_distributions(
        redeclared, capsys, model) -> None:
    code, _, err = _cli(capsys, "run", model, "--product", "atlas_a2")
    assert code == 1 and "Traceback" not in err
    assert "fake-hostile 1.0" in err and "geplug-atlas-a2" in err
