"""The package's shape: its floors, what `import components` loads, which modules may create resources, no circles.

Read from the source (imports resolved statically), so the rules hold for every module, imported by a test or not.
Every import counts: at the top of a module, inside a function (it runs later, but it runs), under `TYPE_CHECKING`,
and `importlib.import_module` of a literal name.

The floors, bottom to top; a module may import its own floor and those below, never one above:

1. the ground: contracts and facts the parts share (versions, tags, names, scheduling facts, instance facts, the
   Kubernetes object and Helm factories, config base types and errors);
2. infrastructure: the network, the cluster, pod and node identities, storage, and the teardown sweep;
3. node-level parts: what launches nodes and equips them (Karpenter; the GPU stack, the Neuron and EFA plugins);
4. platform services: what the applications use (observability, cert-manager, Kueue, the load balancer
   controller);
5. applications: Kubeflow, KServe, team stacks;
6. the program (`components/platform/`: the config aggregate and the stack program), the policy rules that judge
   what it builds, and the package's lazy exports;
7. the tools, which run the library and which it never imports.

The parts of one floor may build on one another, but never in a circle. What a lower floor needs of a higher one
is passed in by whoever builds both (the program), as the GPU stack takes Kubeflow's scheduler exemption in its args.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import pytest

from .conftest import REPO

PACKAGE = REPO / "components"

GROUND, INFRASTRUCTURE, NODES, SERVICES, APPLICATIONS, PROGRAM, TOOLS = (
    "ground",
    "infrastructure",
    "node-level parts",
    "platform services",
    "applications",
    "program",
    "tools",
)
#: Each floor's modules, by name prefix (a prefix takes its submodules too), bottom to top.
FLOORS: dict[str, tuple[str, ...]] = {
    GROUND: (
        "components._lazy",
        "components.admission_policy",
        "components.aws_names",
        "components.config",
        "components.control_plane",
        "components.helm",
        "components.images",
        "components.instances",
        "components.k8s_objects",
        "components.network_policies",
        "components.pod_security",
        "components.regions",
        "components.scheduling",
        "components.tags",
        "components.versions",
    ),
    INFRASTRUCTURE: (
        "components.cluster",
        "components.identity",
        "components.network",
        "components.storage",
        "components.sweep",
    ),
    NODES: ("components.gpu", "components.karpenter"),
    SERVICES: ("components.certmanager", "components.ingress", "components.kueue", "components.observability"),
    APPLICATIONS: ("components.kserve", "components.kubeflow", "components.team"),
    PROGRAM: ("components.platform", "components.platform_config", "components.policy", "components.stack"),
    TOOLS: ("components.cost", "components.preview", "components.tools"),
}
ROOT = "components"
#: Importing one of these creates or registers resources.
RESOURCE_LIBRARIES = ("pulumi_aws", "pulumi_eks", "pulumi_kubernetes", "pulumi_random", "pulumi.dynamic")


def _within(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def floor_of(module: str) -> str | None:
    if module == ROOT:
        return PROGRAM
    return next((floor for floor, prefixes in FLOORS.items() if any(_within(module, p) for p in prefixes)), None)


def _type_checking_only(node: ast.stmt) -> bool:
    return isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"


def room_of(module: str) -> str:
    """The folder (or top-level module) a module belongs to: `components.karpenter`, `components.tools.cost`."""
    parts = module.split(".")
    return ".".join(parts[: 3 if parts[1:2] == ["tools"] and len(parts) > 2 else 2])


@dataclass(frozen=True)
class Source:
    text: str
    is_package: bool


class Package:
    """The modules of a package (name -> source), and what each imports of them."""

    def __init__(self, sources: Mapping[str, Source]):
        self.sources = dict(sources)

    def imports(self, module: str, *, deferred: bool = True) -> frozenset[str]:
        """The modules `module` imports (of this package, resolved; and third-party names as written), with every
        enclosing package of each, which Python runs first (but not `module`'s own, already running, nor the root
        package, which holds only lazy exports: see `test_the_root_package_loads_only_the_ground`)."""
        return self._imports(deferred)[module]

    @cached_property
    def _all(self) -> dict[str, frozenset[str]]:
        return {m: self._read(m, deferred=True) for m in self.sources}

    @cached_property
    def _top(self) -> dict[str, frozenset[str]]:
        return {m: self._read(m, deferred=False) for m in self.sources}

    def _imports(self, deferred: bool) -> dict[str, frozenset[str]]:
        return self._all if deferred else self._top

    def _read(self, module: str, *, deferred: bool) -> frozenset[str]:
        source = self.sources[module]
        tree = ast.parse(source.text)
        if module == ROOT:
            # The package's face names every export for type checkers (`if TYPE_CHECKING:`); those imports never
            # run, and only there may the ground floor name what stands on it.
            tree.body = [node for node in tree.body if not _type_checking_only(node)]
        nodes = ast.walk(tree) if deferred else iter(tree.body)
        found: set[str] = set()
        for node in nodes:
            if isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    package = module if source.is_package else module.rsplit(".", 1)[0]
                    for _ in range(node.level - 1):
                        package = package.rsplit(".", 1)[0]
                    base = f"{package}.{node.module}" if node.module else package
                found.add(base)
                found.update(f"{base}.{a.name}" for a in node.names if f"{base}.{a.name}" in self.sources)
            elif isinstance(node, ast.Call) and _calls_import_module(node):
                found.add(node.args[0].value)  # type: ignore[attr-defined]
        for name in list(found):
            parts = name.split(".")
            found.update(".".join(parts[:i]) for i in range(2, len(parts)) if ".".join(parts[:i]) in self.sources)
        own = {".".join(module.split(".")[:i]) for i in range(1, module.count(".") + 2)}
        return frozenset(found - own - {ROOT})

    def internal(self, module: str, *, deferred: bool = True) -> list[str]:
        return sorted(name for name in self.imports(module, deferred=deferred) if name in self.sources)

    def reachable(self, module: str, *, deferred: bool = True) -> set[str]:
        seen, todo = set(), [module]
        while todo:
            for name in self.internal(todo.pop(), deferred=deferred):
                if name not in seen:
                    seen.add(name)
                    todo.append(name)
        return seen

    def layout_problems(self) -> list[str]:
        """Every module without a floor, every import of a higher floor, every circle of modules or of rooms."""
        order = list(FLOORS)
        problems = [f"{m} is on no floor (add it to FLOORS)" for m in sorted(self.sources) if floor_of(m) is None]
        for module in sorted(self.sources):
            here = floor_of(module)
            for name in self.internal(module):
                there = floor_of(name)
                if here and there and order.index(there) > order.index(here):
                    problems.append(f"{module} ({here}) imports {name} ({there}), a higher floor")
        problems += [f"import circle: {' -> '.join(c)}" for c in _circles(self._edges(lambda m: m))]
        problems += [f"circle of folders: {' -> '.join(c)}" for c in _circles(self._edges(room_of))]
        return problems

    def _edges(self, key) -> dict[str, set[str]]:
        edges: dict[str, set[str]] = {}
        for module in self.sources:
            for name in self.internal(module):
                if name != ROOT and key(name) != key(module):
                    edges.setdefault(key(module), set()).add(key(name))
        return edges


def _calls_import_module(node: ast.Call) -> bool:
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
    return (
        name in ("import_module", "__import__")
        and bool(node.args)
        and isinstance(node.args[0], ast.Constant)
        and isinstance(node.args[0].value, str)
    )


def _circles(edges: Mapping[str, Iterable[str]]) -> list[tuple[str, ...]]:
    """One circle through each node that lies on one (depth-first, in name order): every module of a circle of
    modules, or room of a circle of rooms, is named at least once."""
    found: list[tuple[str, ...]] = []
    on_one: set[str] = set()
    done: set[str] = set()

    def visit(node: str, path: tuple[str, ...]) -> None:
        for name in sorted(edges.get(node, ())):
            if name in path:
                circle = (*path[path.index(name) :], name)
                if not on_one.issuperset(circle):
                    found.append(circle)
                    on_one.update(circle)
            elif name not in done:
                visit(name, (*path, name))
        done.add(node)

    for node in sorted(edges):
        if node not in done:
            visit(node, (node,))
    return found


def _module_name(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


PKG = Package({_module_name(p): Source(p.read_text(), p.name == "__init__.py") for p in PACKAGE.rglob("*.py")})
MODULES = PKG.sources


def is_resource_module(module: str) -> bool:
    """A module that creates resources: it uses a provider SDK, defines or builds components, or gives resources
    their options (through `k8s_objects` or `helm`, the package's own factories)."""
    text = MODULES[module].text
    return (
        any(_within(name, lib) for name in PKG.imports(module) for lib in RESOURCE_LIBRARIES)
        or "pulumi.ComponentResource" in text
        or "pulumi.ResourceOptions(" in text
        or module in ("components.platform.entry", "components.platform.outputs", ROOT)
        or _extends_a_component(module)
    )


def _extends_a_component(module: str) -> bool:
    """Whether a class of `module` builds on a class imported from a resource module (a component of its own on
    a shared one, as `certmanager.CertManager` on `cluster.add_on_part.AddOnPart`)."""
    tree = ast.parse(MODULES[module].text)
    package = module if MODULES[module].is_package else module.rsplit(".", 1)[0]
    imported: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.level:
            base = package
            for _ in range(node.level - 1):
                base = base.rsplit(".", 1)[0]
            origin = f"{base}.{node.module}" if node.module else base
            imported.update({alias.asname or alias.name: origin for alias in node.names})
    bases = {b.id for c in tree.body if isinstance(c, ast.ClassDef) for b in c.bases if isinstance(b, ast.Name)}
    return any(name in imported and imported[name] in MODULES and is_resource_module(imported[name]) for name in bases)


def _synthetic(**modules: str) -> Package:
    """A small package of the given modules (`__` for a dot; every enclosing package exists, empty)."""
    sources = {name.replace("__", "."): Source(text, False) for name, text in modules.items()}
    for name in list(sources):
        parts = name.split(".")
        for i in range(1, len(parts)):
            sources.setdefault(".".join(parts[:i]), Source("", True))
    return Package(sources)


# ------------------------------------------------------------------------------------------------------- floors


def test_the_package_stands_on_its_floors_without_a_circle():
    assert PKG.layout_problems() == []


def test_an_import_of_a_higher_floor_is_caught_even_inside_a_function():
    package = _synthetic(
        components__versions="def pins():\n    from components.platform.entry import program\n",
        components__platform__entry="from components.versions import pins\n",
        components__tools__cost="import components.platform.entry\n",
    )
    assert package.layout_problems() == [
        "components.versions (ground) imports components.platform (program), a higher floor",
        "components.versions (ground) imports components.platform.entry (program), a higher floor",
        "import circle: components.platform.entry -> components.versions -> components.platform.entry",
        "circle of folders: components.platform -> components.versions -> components.platform",
    ]


def test_a_circle_of_parts_is_caught_though_no_two_modules_import_each_other():
    package = _synthetic(
        components__storage__config="from components.cluster.capacity import SystemCapacity\n",
        components__cluster__capacity="",
        components__cluster__component="import importlib\nimportlib.import_module('components.storage.handle')\n",
        components__storage__handle="",
    )
    assert package.layout_problems() == [
        "circle of folders: components.cluster -> components.storage -> components.cluster"
    ]


def test_a_part_that_imports_a_part_of_a_higher_floor_is_caught():
    """The GPU stack (node-level) stands below Kubeflow (an application): what it needs of Kubeflow, the program
    passes in its args; an import of it is refused, whichever way the two parts also reach each other."""
    package = _synthetic(
        components__gpu__component="from components.kubeflow.gpu_scheduling import kubeflow_exemption\n",
        components__kubeflow__gpu_scheduling="from components.gpu.admission import POLICY_NAME\n",
        components__gpu__admission="",
    )
    assert package.layout_problems() == [
        "components.gpu.component (node-level parts) imports components.kubeflow (applications), a higher floor",
        (
            "components.gpu.component (node-level parts) imports components.kubeflow.gpu_scheduling (applications), "
            "a higher floor"
        ),
        "circle of folders: components.gpu -> components.kubeflow -> components.gpu",
    ]


def test_every_folder_is_on_one_floor_only():
    """A folder named on two floors would be judged by the lower one alone."""
    prefixes = [prefix for floor in FLOORS.values() for prefix in floor]
    assert len(prefixes) == len(set(prefixes))
    assert not [(a, b) for a in prefixes for b in prefixes if a != b and _within(a, b)]


def test_an_import_only_for_type_checkers_counts_and_a_module_off_every_floor_is_named():
    package = _synthetic(
        components__gpu__render=(
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from components.tools import x\n"
        ),
        components__tools__x="",
        components__extras="",
    )
    assert package.layout_problems() == [
        "components.extras is on no floor (add it to FLOORS)",
        "components.gpu.render (node-level parts) imports components.tools (tools), a higher floor",
        "components.gpu.render (node-level parts) imports components.tools.x (tools), a higher floor",
    ]


def test_the_root_package_loads_only_the_ground():
    """Every module runs `components/__init__.py` first; it names the public classes lazily and imports nothing
    above the ground, so the floors hold for whoever imports a submodule."""
    assert {floor_of(m) for m in PKG.internal(ROOT)} <= {GROUND}


def test_every_data_file_of_the_package_is_json_or_yaml():
    """Data ships as files read with importlib.resources, never as modules; the wheel packs these suffixes."""
    data = [p for p in PACKAGE.rglob("*") if p.is_file() and p.suffix not in (".py", ".pyc") and p.name != "py.typed"]
    assert data
    assert {p.suffix for p in data} <= {".json", ".yaml"}


# ------------------------------------------------------------------------------------------ library and tools


@pytest.mark.subprocess
def test_importing_the_library_loads_no_tool_and_no_policy_sdk():
    code = (
        "import sys, components, components.platform.entry;"
        "loaded = [m for m in sys.modules if m.startswith(('components.tools', 'components.preview', "
        "'components.cost', 'pulumi_policy', 'moto'))];"
        "print(loaded)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True)
    assert result.stdout.strip() == "[]"


def test_no_library_module_imports_a_tool():
    library = [m for m in MODULES if floor_of(m) != TOOLS]
    offenders = {m: sorted(t for t in PKG.reachable(m) if floor_of(t) == TOOLS) for m in library}
    assert {m: found for m, found in offenders.items() if found} == {}


def test_no_pure_module_stands_on_a_resource_module():
    """Renderers, specs, config models and IAM documents create nothing and load nothing that does when imported
    (a function may load resource code when it runs: that is what its caller asked for)."""
    pure = [m for m in MODULES if floor_of(m) != TOOLS and not is_resource_module(m)]
    assert len(pure) > 20
    offenders = {m: sorted(r for r in PKG.reachable(m, deferred=False) if is_resource_module(r)) for m in pure}
    assert {m: found for m, found in offenders.items() if found} == {}
