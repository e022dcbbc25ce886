"""The package's shape: what `import components` loads, which modules may create resources, and no import circles.

Read from the source (imports resolved statically), so the rules hold for every module, imported by a test or not.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from functools import cache
from pathlib import Path

from .conftest import REPO

PACKAGE = REPO / "components"
#: Tools: they run the library (under mocks, or against AWS with boto3); the library never imports them. (The
#: teardown sweep is a part of the library, run by `pulumi destroy`; only its command line is a tool.)
TOOLS = ("components.tools", "components.preview")
#: Importing one of these creates or registers resources.
RESOURCE_LIBRARIES = ("pulumi_aws", "pulumi_eks", "pulumi_kubernetes", "pulumi_random", "pulumi.dynamic")


def module_name(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in PACKAGE.rglob("*.py")}


@cache
def imports(module: str) -> frozenset[str]:
    """The modules `module` imports at its top level (components modules resolved; a package's lazy exports are not
    imports), and the third-party roots."""
    tree = ast.parse(MODULES[module].read_text())
    found = set()
    for node in tree.body:  # top level only: imports inside functions run late, on use
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            base = node.module
            if node.level:
                package = module if MODULES[module].name == "__init__.py" else module.rsplit(".", 1)[0]
                for _ in range(node.level - 1):
                    package = package.rsplit(".", 1)[0]
                base = f"{package}.{node.module}"
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names if f"{base}.{alias.name}" in MODULES)
    # Python runs every enclosing package's __init__ first (the importing module's own are already running).
    own = {".".join(module.split(".")[:i]) for i in range(1, len(module.split(".")) + 1)}
    for name in list(found):
        parts = name.split(".")
        found.update(".".join(parts[:i]) for i in range(1, len(parts)) if ".".join(parts[:i]) in MODULES)
    found -= own
    return frozenset(found)


def is_resource_module(module: str) -> bool:
    """A module that creates resources: it uses a provider SDK, defines or builds components, or gives resources
    their options (through `k8s_objects` or `helm`, the package's own factories)."""
    text = MODULES[module].read_text()
    return (
        any(name == lib or name.startswith(lib + ".") for name in imports(module) for lib in RESOURCE_LIBRARIES)
        or "pulumi.ComponentResource" in text
        or "pulumi.ResourceOptions(" in text
        or module in ("components.stack", "components")
    )


def reachable(module: str) -> set[str]:
    seen, todo = set(), [module]
    while todo:
        current = todo.pop()
        for name in imports(current):
            if name in MODULES and name not in seen:
                seen.add(name)
                todo.append(name)
    return seen


def test_importing_the_library_loads_no_tool_and_no_policy_sdk():
    code = (
        "import sys, components, components.stack;"
        "loaded = [m for m in sys.modules if m.startswith(('components.tools', 'components.preview', "
        "'pulumi_policy', 'moto'))];"
        "print(loaded)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True)
    assert result.stdout.strip() == "[]"


def test_no_library_module_imports_a_tool():
    library = [m for m in MODULES if not m.startswith(TOOLS)]
    offenders = {m: sorted(t for t in reachable(m) if t.startswith(TOOLS)) for m in library}
    assert {m: found for m, found in offenders.items() if found} == {}


def test_no_pure_module_stands_on_a_resource_module():
    """Renderers, specs, config models and IAM documents create nothing and load nothing that does."""
    pure = [m for m in MODULES if not m.startswith(TOOLS) and not is_resource_module(m)]
    assert len(pure) > 20
    offenders = {m: sorted(r for r in reachable(m) if is_resource_module(r)) for m in pure}
    assert {m: found for m, found in offenders.items() if found} == {}


def test_there_is_no_import_circle():
    def visit(module: str, path: tuple[str, ...]) -> tuple[str, ...] | None:
        for name in sorted(imports(module)):
            if name not in MODULES:
                continue
            if name in path:
                return (*path, name)
            found = visit(name, (*path, name))
            if found:
                return found
        return None

    for module in sorted(MODULES):
        assert visit(module, (module,)) is None, module
