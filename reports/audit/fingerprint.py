"""What a saved audit section was computed with, beyond its configuration: the code and the libraries.

A section saved in an ``--out`` directory may be reused by a later audit only if it would come out the
same. Its configuration, trials, seed and batch size are in its key already; this module adds

- ``our_code``: one SHA-256 over the source and data of this project's packages (``accounting``,
  ``dpfed``, ``attacks``, ``reports``: every ``.py`` file and every ``.toml`` file, such as the DP-FTS-DE
  presets a target's parameters name, by relative path and content);
- ``libraries``: the installed versions of the libraries whose answers enter the numbers
  (dp-accounting, opacus, torch, numpy, scipy, scikit-learn), read from the package metadata without
  importing them;
- per probe, the probe's own provenance (``attacks.probes.base.BaseProbe.provenance``: its modules'
  hashes and, for the user probe, the user module's source and the datasets file's content), exactly as
  ``attack --checkpoint`` records it.

``changed`` names which of these parts differ between a stored fingerprint and the current one, so that
the audit can say why it recomputed a section.
"""

from __future__ import annotations

import hashlib
from importlib import metadata
from pathlib import Path

PACKAGES = ("accounting", "dpfed", "attacks", "reports")
LIBRARIES = ("dp-accounting", "opacus", "torch", "numpy", "scipy", "scikit-learn")
# files whose content can change a section: code, and data read at run time (dpfed/presets/*.toml)
SUFFIXES = (".py", ".toml")
ROOT = Path(__file__).resolve().parents[2]

_memo: dict = {}


def package_files() -> list[Path]:
    """Every source and data file (``SUFFIXES``) of our packages, in a fixed order."""
    files = []
    for package in PACKAGES:
        files.extend(sorted(p for p in (ROOT / package).rglob("*") if p.suffix in SUFFIXES and p.is_file()))
    return files


def our_code_hash() -> str:
    """SHA-256 over the relative paths and contents of ``package_files()`` (memoised per file list and
    modification times, so an edit during a long-lived process is still seen)."""
    files = package_files()
    stamp = tuple((str(p), p.stat().st_mtime_ns, p.stat().st_size) for p in files if p.exists())
    if _memo.get("stamp") == stamp:
        return _memo["hash"]
    digest = hashlib.sha256()
    for path in files:
        try:
            data = path.read_bytes()
        except OSError:
            data = b"<missing>"
        name = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
        digest.update(f"{name}\0{len(data)}\0".encode())
        digest.update(data)
    _memo.update(stamp=stamp, hash=digest.hexdigest())
    return _memo["hash"]


def library_versions() -> dict:
    """Installed versions of the libraries that enter the numbers ("absent" where not installed)."""
    out = {}
    for name in LIBRARIES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "absent"
    return out


def audit_fingerprint() -> dict:
    """The code and library part of every section key of this audit."""
    return {"our_code": our_code_hash(), "libraries": library_versions()}


def probe_fingerprint(probe) -> dict:
    """A probe's provenance (its code, and for the user probe the user module and datasets)."""
    provenance = getattr(probe, "provenance", None)
    return {"probe_code": provenance() if callable(provenance) else "unknown"}


def changed(stored: dict | None, current: dict) -> list[str]:
    """Human names of the parts of ``current`` that differ from ``stored`` (empty if none can be told)."""
    if not isinstance(stored, dict):
        return []
    words = []
    if stored.get("our_code") != current.get("our_code"):
        words.append("this project's code")
    old_libs, new_libs = stored.get("libraries") or {}, current.get("libraries") or {}
    for name in sorted(set(old_libs) | set(new_libs)):
        if old_libs.get(name) != new_libs.get(name):
            words.append(f"{name} {old_libs.get(name, '?')} -> {new_libs.get(name, '?')}")
    old_probe, new_probe = stored.get("probe_code"), current.get("probe_code")
    if isinstance(old_probe, dict) and isinstance(new_probe, dict):
        for key in sorted(set(old_probe) | set(new_probe)):
            if old_probe.get(key) != new_probe.get(key):
                words.append({"function_source": "the user's module", "datasets_content": "the datasets file",
                              "project_code": "the code of accounting, dpfed and attacks"}.get(key, f"module {key}"))
    elif old_probe != new_probe:
        words.append("the probe's code")
    return words


def user_code_hash(paths) -> str:
    """SHA-256 over the given files' names and contents (a directory: its ``.py`` and ``.toml`` files), so that
    a section computed by a user's code is reused only while that code is unchanged."""
    digest = hashlib.sha256()
    for path in sorted(Path(p) for p in paths):
        files = sorted(f for f in path.rglob("*") if f.suffix in (".py", ".toml") and f.is_file()) \
            if path.is_dir() else [path]
        for f in files:
            digest.update(f"{f}\0".encode() + (f.read_bytes() if f.is_file() else b"<missing>"))
    return digest.hexdigest()
