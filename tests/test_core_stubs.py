"""The hand-written stubs subword/_core.pyi and the compiled extension list the same names."""

from __future__ import annotations

import ast
from pathlib import Path


from subword import _core as core
STUB = Path(__file__).resolve().parents[1] / "subword" / "_core.pyi"


def _stub_names() -> dict[str, set[str]]:
    """{"": module-level names, "Class": its method/property names}."""
    names: dict[str, set[str]] = {"": set()}
    for node in ast.parse(STUB.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.ClassDef):
            names[""].add(node.name)
            names[node.name] = {item.name for item in node.body if isinstance(item, ast.FunctionDef)}
        elif isinstance(node, ast.FunctionDef):
            names[""].add(node.name)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names[""].add(node.target.id)
    return names


def test_every_stub_name_exists_in_the_extension():
    names = _stub_names()
    missing = sorted(n for n in names[""] if not hasattr(core, n))
    for cls_name, members in names.items():
        if cls_name and hasattr(core, cls_name):
            cls = getattr(core, cls_name)
            missing += [f"{cls_name}.{m}" for m in sorted(members) if not hasattr(cls, m)]
    assert missing == [], "stubs name things the extension lacks (stale build or stale stub)"


def test_every_public_extension_name_has_a_stub():
    names = _stub_names()
    public = {n for n in dir(core) if not n.startswith("_")}
    assert sorted(public - names[""]) == [], "add these to subword/_core.pyi"
    for cls_name in sorted(public & set(names)):
        cls = getattr(core, cls_name)
        if not isinstance(cls, type):
            continue
        members = {m for m in vars(cls) if not m.startswith("_")}
        assert sorted(members - names[cls_name]) == [], f"add these {cls_name} members to subword/_core.pyi"
