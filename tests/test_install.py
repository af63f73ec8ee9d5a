"""The built wheel, installed without extras into a fresh virtualenv, as a new user would."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent

pytestmark = pytest.mark.slow


def uv(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """Run uv, offline first (its cache has every wheel ``uv sync`` used), then online."""
    exe = shutil.which("uv")
    assert exe is not None, "uv is needed to build and install the wheel"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VIRTUAL_ENV", "UV_PROJECT"))}
    for extra in (["--offline"], []):
        done = subprocess.run(
            [exe, *args, *extra], cwd=cwd, env=env, capture_output=True, text=True, timeout=600
        )
        if done.returncode == 0:
            return done
    raise AssertionError(f"uv {' '.join(args)} failed:\n{done.stderr}")


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh virtualenv with the wheel built from this checkout, and no extras."""
    base = tmp_path_factory.mktemp("install")
    uv("build", "--wheel", "--out-dir", str(base / "dist"), str(ROOT))
    [wheel] = (base / "dist").glob("memctx-*.whl")
    uv("venv", "--python", sys.executable, str(base / "venv"))
    python = base / "venv" / "bin" / "python"
    uv("pip", "install", "--python", str(python), str(wheel))
    return base / "venv"


def run(venv: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PATH": f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}"}
    env.pop("PYTHONPATH", None)
    return subprocess.run(list(args), cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def test_the_core_install_has_no_test_tools(venv: Path, tmp_path: Path) -> None:
    code = "import importlib.util as u; print([m for m in ('pytest', 'syrupy') if u.find_spec(m)])"

    done = run(venv, str(venv / "bin" / "python"), "-c", code, cwd=tmp_path)

    assert done.stdout.strip() == "[]", done.stderr


def test_the_readme_first_commands_work_after_install(venv: Path, tmp_path: Path) -> None:
    wrote = run(venv, "memctx", "example", cwd=tmp_path)
    assert wrote.returncode == 0, wrote.stderr
    assert (tmp_path / "coding_agent.json").read_bytes() == (
        ROOT / "examples" / "coding_agent.json"
    ).read_bytes()

    built = run(
        venv,
        "memctx",
        "build",
        "coding_agent.json",
        "--max-tokens",
        "800",
        "--model",
        "gpt-4o",
        cwd=tmp_path,
    )

    assert built.returncode == 0, built.stderr
    assert built.stdout.startswith("=== system ===")
    assert "tokens (exact" in built.stderr
    again = run(venv, "memctx", "example", cwd=tmp_path)
    assert again.returncode == 1
    assert again.stderr == "memctx: error: coding_agent.json exists; add --force to overwrite it\n"


def test_pytest_without_syrupy_imports_nothing_of_memctx_and_explains_the_extra(
    venv: Path, tmp_path: Path
) -> None:
    uv("pip", "install", "--python", str(venv / "bin" / "python"), "pytest")
    (tmp_path / "test_user.py").write_text(
        "import sys\n\n"
        "def test_plain():\n"
        "    assert not [m for m in sys.modules if m == 'memctx' or m.startswith('memctx.')]\n\n"
        "def test_snapshot(context_snapshot):\n"
        "    assert context_snapshot == '<a/>'\n"
    )

    done = run(
        venv,
        str(venv / "bin" / "python"),
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        cwd=tmp_path,
    )

    assert "1 passed, 1 error" in done.stdout, done.stdout  # the fixture fails at set-up
    assert "pip install 'memctx[pytest]'" in done.stdout
    assert (
        "memctx_pytest"
        in run(
            venv,
            str(venv / "bin" / "python"),
            "-m",
            "pytest",
            "--trace-config",
            "-q",
            "--co",
            cwd=tmp_path,
        ).stdout
    )
