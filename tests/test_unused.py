"""No dead code in the package: every function, class, constant, method and attribute defined in `components/` is
reached from the package's own code (components/, the policy pack, the examples, the benchmark, the stack program).

The tests are not counted as users: a name only a test reaches is dead code with a test, unless users of the package
need it; then `ALLOWED` says so, with the reason. Found with vulture, which matches by name (a name used anywhere
counts as used), so it misses some dead code but never reports live code except through dynamic access.
"""

from __future__ import annotations

import ast
from pathlib import Path

from vulture import Vulture

from .conftest import REPO

#: What uses the package: everything a user or the stack runs.
USERS = ("components", "policies", "examples", "benchmarks", "__main__.py")

#: Pydantic calls its validators and reads `model_config` itself.
PYDANTIC_DECORATORS = ["@model_validator", "@field_validator"]
PYDANTIC_NAMES = ["model_config"]
#: Class bodies whose names are data, not code: a config model's field is a key users may set (and `extra="forbid"`
#: rejects it once removed), an enum member a value users may write.
DATA_BASES = frozenset({"BaseModel", "Enum", "StrEnum", "IntEnum"})

_RATE = "read by name through cost.calculator.Pricer.rate"

#: Unreached names kept on purpose, by file: name -> why.
ALLOWED: dict[str, dict[str, str]] = {
    "components/tools/cost/prices/__init__.py": dict.fromkeys(
        (
            "eks_standard_hour",
            "eks_extended_hour",
            "nat_gateway_hour",
            "public_ipv4_hour",
            "gp3_gib_month",
            "log_ingestion_gb",
            "kms_key_month",
        ),
        _RATE,
    ),
    "components/tools/preview/program.py": dict.fromkeys(
        ("find_spec", "create_module", "exec_module"),
        "importlib's finder and loader protocol: the import system calls them",
    ),
    "components/tools/preview/mocks.py": {
        "Call": "the mock monitor's gRPC method for component methods (Cluster.getKubeconfig)",
    },
    "components/tools/preview/inventory.py": {
        "one": "the inventory helper (with of_type) that tests of this and users' programs read resources with",
    },
    "components/cluster/handle.py": {
        "from_existing": "how a program on a cluster the platform did not create gets its handle (README, library use)",
        "irsa_role": "deprecated alias (0.4) of workload_role, kept for programs written against 0.3",
    },
    "components/sweep/resource.py": {"diff": "dynamic provider method: the engine calls it on every update"},
    "components/observability/render.py": dict.fromkeys(
        ("DCGM_METRICS", "KARPENTER_METRICS"),
        "the metrics each exporter collects; only the tests read them, to check every rule and panel against them",
    ),
    "components/observability/cost.py": {
        "RECORDED": "the series the GPU cost rules record; the tests check every dashboard query against them",
    },
    "components/cluster/capacity.py": {
        "ADDON_SOURCE": "marks the EKS add-ons' figures, which the preview does not render; the sizing test skips them",
    },
    "components/karpenter/repair.py": dict.fromkeys(
        ("REPAIR_CONDITIONS", "UNHEALTHY_POOL_SHARE", "after_minutes", "set_by"),
        "what Karpenter's node repair acts on, as documented; the tests hold it to the docs and the runbook's table",
    ),
    "components/kubeflow/render.py": {
        "canonical_digest": "how expected-objects.tsv names objects; only the render tests compute it",
    },
}


def _base_name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def data_lines() -> set[tuple[str, int]]:
    """(file, line) of every field of a pydantic model and member of an enum defined by the package."""
    classes: dict[str, tuple[set[str], list[tuple[str, ast.ClassDef]]]] = {}
    for path in sorted((REPO / "components").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef):
                bases, defined = classes.setdefault(node.name, (set(), []))
                bases.update(filter(None, map(_base_name, node.bases)))
                defined.append((path.relative_to(REPO).as_posix(), node))
    data, changed = set(DATA_BASES), True
    while changed:  # subclasses of subclasses, by name (class names are unique enough for this)
        grown = data | {name for name, (bases, _) in classes.items() if bases & data}
        changed, data = grown != data, grown
    return {
        (path, statement.lineno)
        for name in data & classes.keys()
        for path, node in classes[name][1]
        for statement in node.body
        if isinstance(statement, (ast.AnnAssign, ast.Assign))
    }


def unused() -> dict[tuple[str, str], str]:
    """(file, name) -> vulture's line for every unreached name defined in components/."""
    vulture = Vulture(ignore_names=PYDANTIC_NAMES, ignore_decorators=PYDANTIC_DECORATORS)
    vulture.scavenge([str(REPO / user) for user in USERS])
    data = data_lines()
    found = {}
    for item in vulture.get_unused_code():
        path = Path(item.filename).resolve().relative_to(REPO).as_posix()
        if path.startswith("components/") and (path, item.first_lineno) not in data:
            found[(path, item.name)] = f"{path}:{item.first_lineno}: {item.message}"
    return found


def test_every_name_in_the_package_is_reached_by_its_own_code():
    dead = [line for (path, name), line in sorted(unused().items()) if name not in ALLOWED.get(path, {})]
    assert not dead, (
        "unused definitions (delete them; or, if users of the package need one, add it to ALLOWED with why):\n"
        + "\n".join(dead)
    )


def test_every_allowed_name_is_still_defined_and_still_unreached():
    found = unused()
    stale = [f"{path}: {name}" for path, names in ALLOWED.items() for name in names if (path, name) not in found]
    assert not stale, "ALLOWED names that are gone or now used (remove them from ALLOWED):\n" + "\n".join(stale)
