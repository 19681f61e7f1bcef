"""Shadow CUDA toolkits: the real toolkit through symlinks, with our ``bin/ptxas``.

Why: nvcc puts its own ``bin/`` first on PATH before it runs ``ptxas``, so a
``ptxas`` earlier on the user's PATH is never seen. A directory that mirrors
the toolkit entry by entry (symlinks), except ``bin/ptxas``, which is a small
script running `ptxasw.driver.ptxas`, makes ``SHADOW/bin/nvcc`` (a symlink; nvcc
finds its ``bin`` from the path it was called by) call our wrapper. Point
``CUDA_HOME``, ``CMAKE_CUDA_COMPILER=SHADOW/bin/nvcc`` or PATH at it.

The script records the real ptxas (``PTXASW_REAL_PTXAS``, unless the caller
sets that) and the interpreter that created it, so the shadow keeps working
from any environment.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import sys
from collections.abc import Mapping
from pathlib import Path

import ptxasw

SHADOW_MARKER = ".ptxasw-shadow-toolkit.json"


class ToolkitError(Exception):
    """A shadow toolkit cannot be made; the message is one line for the user."""


def _toolkit_root(path: Path) -> Path | None:
    """The toolkit root if ``path`` (a root or its bin/) holds nvcc and ptxas."""
    for root in (path, path.parent if path.name == "bin" else None):
        if root is not None and (root / "bin" / "nvcc").is_file() and (root / "bin" / "ptxas").is_file():
            return root
    return None


def _resolve_nvcc(nvcc: Path) -> Path:
    """Follow symlinks and one-line ``exec /real/nvcc`` shell shims (like /usr/local/bin/nvcc)."""
    nvcc = nvcc.resolve()
    for _ in range(8):
        try:
            with open(nvcc, "rb") as f:
                head = f.read(4096)
        except OSError:
            break
        if not head.startswith(b"#!"):
            break
        target = None
        for line in head.decode("utf-8", "replace").splitlines():
            words = shlex.split(line, comments=True) if line.strip() else []
            if len(words) >= 2 and words[0] == "exec" and words[1].endswith("/nvcc"):
                target = Path(words[1])
        if target is None or not target.is_file():
            break
        nvcc = target.resolve()
    return nvcc


def find_cuda_toolkit(cuda: Path | None = None, env: Mapping[str, str] | None = None) -> Path:
    """The real CUDA toolkit root: ``cuda``, $CUDA_HOME, $CUDA_PATH, nvcc on PATH, /usr/local/cuda.

    An explicit ``cuda`` that is not a toolkit is an error; the others are
    tried in turn. A shadow toolkit found this way is followed to the real one.
    """
    env = os.environ if env is None else env
    if cuda is not None:
        root = _toolkit_root(Path(cuda).expanduser())
        if root is None:
            raise ToolkitError(f"{cuda} is not a CUDA toolkit (no bin/nvcc and bin/ptxas)")
        return _unshadow(root.resolve())
    candidates: list[Path] = [Path(env[v]) for v in ("CUDA_HOME", "CUDA_PATH") if env.get(v)]
    nvcc = shutil.which("nvcc", path=env.get("PATH"))
    if nvcc:
        candidates.append(_resolve_nvcc(Path(nvcc)).parent.parent)
    candidates.append(Path("/usr/local/cuda"))
    for c in candidates:
        root = _toolkit_root(c)
        if root is not None:
            return _unshadow(root.resolve())
    raise ToolkitError("cannot find a CUDA toolkit: pass --cuda PATH or set CUDA_HOME")


def _unshadow(root: Path) -> Path:
    """If ``root`` is itself a shadow toolkit, the real toolkit it mirrors."""
    marker = root / SHADOW_MARKER
    if marker.is_file():
        try:
            return Path(json.loads(marker.read_text())["cuda"])
        except (OSError, ValueError, KeyError, TypeError):
            raise ToolkitError(f"{marker} is unreadable; make the shadow toolkit again") from None
    return root


_BOOTSTRAP = """
import os, sys
sys.path.append(sys.argv.pop(1))
try:
    from ptxasw.driver.ptxas import main
except Exception as exc:  # ptxasw gone or broken: never break the build
    real = os.environ["PTXASW_REAL_PTXAS"]
    print(f"ptxasw: warning: cannot load ptxasw ({exc}); running {real} directly", file=sys.stderr)
    os.execv(real, [real, *sys.argv[1:]])
sys.exit(main())
"""


def ptxas_script(real_ptxas: Path, python: str | None = None) -> str:
    """The text of a shadow toolkit's ``bin/ptxas``: run ptxasw.driver.ptxas with the real ptxas recorded.

    The package's folder is appended (not prepended) to sys.path so an
    installed ptxasw wins and a checkout works too; ``-P`` keeps the build's
    working directory off sys.path. If the interpreter or ptxasw is gone, the
    script runs the real ptxas directly (with a warning) rather than fail.
    """
    python = python or sys.executable
    pkg_parent = str(Path(ptxasw.__file__).resolve().parent.parent)
    return (
        "#!/bin/sh\n"
        "# ptxasw shadow CUDA toolkit: this ptxas runs ptxasw.driver.ptxas (ptxasw's passes,\n"
        "# fail-open), which then runs the real ptxas recorded here.\n"
        f': "${{PTXASW_REAL_PTXAS:={_sh_default(str(real_ptxas))}}}"\n'
        "export PTXASW_REAL_PTXAS\n"
        f"py={shlex.quote(python)}\n"
        'if [ ! -x "$py" ]; then\n'
        '    echo "ptxasw: warning: $py is gone; running $PTXASW_REAL_PTXAS directly" >&2\n'
        '    exec "$PTXASW_REAL_PTXAS" "$@"\n'
        "fi\n"
        f'exec "$py" -P -c {shlex.quote(_BOOTSTRAP)} {shlex.quote(pkg_parent)} "$@"\n'
    )


def _sh_default(value: str) -> str:
    """Quote ``value`` for use inside ``${VAR:=...}`` within double quotes."""
    return "".join("\\" + c if c in '\\$`"}' else c for c in value)


def create_shadow_toolkit(dest: Path, cuda: Path | None = None) -> Path:
    """Build a shadow of the CUDA toolkit at ``dest`` and return ``dest``.

    Every entry of the real toolkit is a symlink, ``bin/`` is a real folder of
    symlinks, and ``bin/ptxas`` is our wrapper script. Making it again over an
    older shadow replaces it; any other non-empty ``dest`` is refused.
    """
    real = find_cuda_toolkit(cuda)
    dest = Path(dest).expanduser().absolute()
    if dest.resolve() == real or real in dest.resolve().parents:
        raise ToolkitError(f"{dest} is inside the real toolkit {real}")
    if dest.is_symlink() or (dest.exists() and not dest.is_dir()):
        raise ToolkitError(f"{dest} exists and is not a folder")
    if dest.is_dir() and any(dest.iterdir()):
        if not (dest / SHADOW_MARKER).is_file():
            raise ToolkitError(f"{dest} is not empty and is not a shadow toolkit; choose another folder")
        shutil.rmtree(dest)
    dest.mkdir(parents=True, exist_ok=True)
    real_ptxas = (real / "bin" / "ptxas").resolve()
    for entry in sorted(real.iterdir()):
        if entry.name == "bin":
            continue
        (dest / entry.name).symlink_to(entry)
    (dest / "bin").mkdir()
    for entry in sorted((real / "bin").iterdir()):
        if entry.name != "ptxas":
            (dest / "bin" / entry.name).symlink_to(entry)
    script = dest / "bin" / "ptxas"
    script.write_text(ptxas_script(real_ptxas))
    script.chmod(0o755)
    (dest / SHADOW_MARKER).write_text(
        json.dumps({"cuda": str(real), "ptxas": str(real_ptxas), "python": sys.executable}, indent=2) + "\n"
    )
    return dest
