"""The suites and bundles that ship with the harness, found relative to this package.

In a checkout, ``harness/packaged/suites`` and ``harness/packaged/bundles`` are links to the
repository's ``suites/`` and ``bundles/``; a wheel (``pip install .``, editable or not) holds them as
package data under the same names. So ``harness run shellper`` and ``harness suites list`` work from
any folder and after any install, and a suite added under ``suites/`` (any depth: ``suites/group/name``)
is found without being listed anywhere. A suite's name here is its folder's path below ``suites/``.

Imports nothing of the harness: every layer may ask where a shipped suite or bundle is.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent
SUITES = ROOT / "suites"
"""The shipped suites (each a folder holding ``suite.yaml``)."""
BUNDLES = ROOT / "bundles"
"""The shipped bundles (each a folder holding ``bundle.yaml``)."""
SUITE_FILE = "suite.yaml"


@dataclass(frozen=True, slots=True)
class PackagedSuite:
    """A suite that ships with the harness."""

    name: str
    """Its folder below ``suites/`` (``smoke``, ``group/name``): what ``harness run NAME`` takes."""
    path: Path
    """Its folder."""


def packaged_suites() -> list[PackagedSuite]:
    """Every shipped suite, by name. Folders starting with ``_`` or ``.`` (generators, caches) are not suites."""
    if not SUITES.is_dir():
        return []
    found = []
    for spec in SUITES.rglob(SUITE_FILE):
        relative = spec.parent.relative_to(SUITES)
        if any(part.startswith(("_", ".")) for part in relative.parts):
            continue
        found.append(PackagedSuite(relative.as_posix(), spec.parent))
    return sorted(found, key=lambda s: s.name)


def packaged_suite(name: str) -> Path | None:
    """The shipped suite called ``name`` (its folder below ``suites/``), or None."""
    for suite in packaged_suites():
        if suite.name == name.strip("/"):
            return suite.path
    return None


def packaged_bundle(name: str) -> Path | None:
    """The shipped bundle called ``name`` (a folder of ``bundles/`` holding ``bundle.yaml``), or None."""
    folder = BUNDLES / name
    return folder if (folder / "bundle.yaml").is_file() else None


def suite_dir(given: str | Path) -> Path:
    """The suite folder a command was given: the path itself when it is a folder, else the shipped suite
    of that name, else the path unchanged (loading it then says it is not there)."""
    path = Path(given).expanduser()
    if path.is_dir():
        return path
    shipped = packaged_suite(str(given)) if not path.is_absolute() else None
    return shipped if shipped is not None else path


__all__ = [
    "BUNDLES",
    "SUITES",
    "PackagedSuite",
    "packaged_bundle",
    "packaged_suite",
    "packaged_suites",
    "suite_dir",
]
