"""Reading lazyscan's own source for the structure tests (``ast``; nothing is imported or run)."""

from __future__ import annotations

import ast


def own_private_names(tree: ast.Module) -> set[str]:
    """The private names (``_x``) a module defines: functions, classes, assignments, attributes
    of ``self`` and parameters. A private name a module uses but does not define is another
    module's."""
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            found.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            found.add(node.id)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            found.add(node.attr)
        elif isinstance(node, ast.arg):
            found.add(node.arg)
    return {n for n in found if n.startswith("_") and not n.startswith("__")}
