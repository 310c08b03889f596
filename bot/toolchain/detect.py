"""Which toolchain pins a change moved: ``toolchain_changes(path, old_text, new_text)``.

Each side's pins are grouped by package and place (the file's table or extra); a group whose
version text differs between the sides is one change line of kind ``"toolchain"``, with the old
and new versions (None where the side does not pin the package there). Several pins of one
group (one per platform, say) are joined with `` | ``. A ``setup.py`` side's version checks
(``version_checks.py``) are pins of it too; a submodule's diff whose sides are gitlinks is a
pin of the package the submodule is (``submodules.py``). Pure.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from bot.contracts.review import ChangeLine
from bot.toolchain.packages import toolchain_package
from bot.toolchain.pins import Pin, file_kind, pins
from bot.toolchain.submodules import gitlink, submodule_pin
from bot.toolchain.version_checks import same_checks, version_checks

__all__ = ["diff_toolchain", "file_kind", "toolchain_changes"]

Read = Callable[[str], "str | None"]


def _grouped(found: Iterable[Pin]) -> dict[tuple[str, str], str]:
    groups: dict[tuple[str, str], list[str]] = {}
    for pin in found:
        specs = groups.setdefault((pin.package, pin.where), [])
        if pin.spec not in specs:
            specs.append(pin.spec)
    return {key: " | ".join(specs) for key, specs in groups.items()}


def _checks(path: str | None, text: str | None) -> list[Pin] | None:
    return version_checks(text or "") if path and file_kind(path) == "setup" else []


def toolchain_changes(
    old_path: str | None, new_path: str | None, old_text: str | None, new_text: str | None
) -> list[ChangeLine]:
    """The toolchain pins that differ between the old and the new text of one file; a
    ``setup.py``'s version checks where they bound the version differently (where a side is
    not Python, a diff's lines alone, its checks are not known and none is compared)."""
    old_checks, new_checks = _checks(old_path, old_text), _checks(new_path, new_text)
    if old_checks is None or new_checks is None or same_checks(old_checks, new_checks):
        old_checks = new_checks = []
    old = _grouped(pins(old_path, old_text or "") + old_checks) if old_path else {}
    new = _grouped(pins(new_path, new_text or "") + new_checks) if new_path else {}
    return _changes(old_path, new_path, old, new)


def _changes(
    old_path: str | None,
    new_path: str | None,
    old: dict[tuple[str, str], str],
    new: dict[tuple[str, str], str],
) -> list[ChangeLine]:
    lines = []
    for package, where in dict.fromkeys([*old, *new]):
        before, after = old.get((package, where)), new.get((package, where))
        if before == after:
            continue
        known = toolchain_package(package)
        what = known.what if known is not None else package
        lines.append(
            ChangeLine(
                kernel=package,
                kind="toolchain",
                old_paths=(old_path,) if old_path and before is not None else (),
                new_paths=(new_path,) if new_path and after is not None else (),
                old_version=before,
                new_version=after,
                detail=f"{what}{f' ({where})' if where else ''}",
            )
        )
    return lines


def diff_toolchain(
    files: Iterable[tuple[str | None, str | None, str, str]],
    old_read: Read | None = None,
    new_read: Read | None = None,
) -> list[ChangeLine]:
    """The toolchain changes of a diff's files, each given as (old path, new path, the old
    side's diff lines, the new side's diff lines). A side is read whole through ``old_read`` /
    ``new_read`` where given; its diff lines stand in for it where it cannot be read. A
    submodule's sides are its diff lines (the gitlinks), its URL read from ``.gitmodules``."""
    lines: list[ChangeLine] = []
    for old_path, new_path, old_lines, new_lines in files:
        if not (file_kind(old_path or "") or file_kind(new_path or "")):
            if gitlink(old_lines) or gitlink(new_lines):
                lines += _submodule_changes(
                    (old_path, old_lines, old_read), (new_path, new_lines, new_read)
                )
            continue
        old_text = (old_read(old_path) if old_read and old_path else None) or old_lines
        new_text = (new_read(new_path) if new_read and new_path else None) or new_lines
        lines += toolchain_changes(old_path, new_path, old_text, new_text)
    return lines


def _submodule_changes(
    *sides: tuple[str | None, str, Read | None],
) -> list[ChangeLine]:
    """The toolchain change of one submodule's diff: (path, gitlink line, reader) a side."""
    grouped = []
    for path, text, read in sides:
        pin = submodule_pin(path, text, read(".gitmodules") if read else None) if path else None
        grouped.append({(pin.package, pin.where): pin.spec} if pin else {})
    (old_path, _, _), (new_path, _, _) = sides
    return _changes(old_path, new_path, *grouped)
