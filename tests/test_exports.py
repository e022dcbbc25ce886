"""The public API: `from components import X` for every component and its args, the same names for type checkers as
at run time, and an import of the package that loads none of them."""

from __future__ import annotations

import ast
import dataclasses
import importlib
import inspect
import re
import subprocess
import sys
import textwrap
import typing

import pulumi
import pytest

import components

from .conftest import REPO


def type_checking_imports() -> dict[str, str]:
    """{name: module} of the package's `if TYPE_CHECKING:` block, as type checkers and editors read it."""
    tree = ast.parse((REPO / "components" / "__init__.py").read_text())
    (block,) = [
        node
        for node in tree.body
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"
    ]
    found = {}
    for node in block.body:
        assert isinstance(node, ast.ImportFrom), ast.unparse(node)
        assert node.module, ast.unparse(node)
        for alias in node.names:
            # `X as X`: re-exported to type checkers whatever they make of the computed __all__
            assert alias.asname == alias.name, ast.unparse(node)
            found[alias.name] = f"components.{node.module}" if node.level else node.module
    return found


def test_type_checkers_see_exactly_the_names_the_package_exports_at_run_time():
    lazy = {name: f"components.{module}" for name, module in components._EXPORTS.items()}
    assert type_checking_imports() == lazy
    assert components.__all__ == sorted(lazy)


def test_every_export_is_the_class_its_module_defines():
    for name, module in type_checking_imports().items():
        exported = getattr(components, name)
        assert exported is getattr(importlib.import_module(module), name)
        assert exported.__module__ == module, f"{name} is defined in {exported.__module__}, not {module}"


def library_components() -> set[str]:
    """Every ComponentResource the package defines (read from the source: loaded or not)."""
    found = set()
    for path in (REPO / "components").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef) and any(ast.unparse(b) == "pulumi.ComponentResource" for b in node.bases):
                found.add(node.name)
    return found


def test_every_component_and_the_args_it_takes_are_exported():
    names = library_components()
    assert {"Cluster", "Network", "Observability", "TeamProfile"} <= names
    assert names <= set(components.__all__)
    for name in names:
        component = getattr(components, name)
        assert issubclass(component, pulumi.ComponentResource)
        args = typing.get_type_hints(component.__init__)["args"]
        assert dataclasses.is_dataclass(args), f"{name} takes {args}, not an args dataclass"
        assert isinstance(args, type), f"{name} takes an instance, not an args class"
        assert getattr(components, args.__name__) is args, f"{name}'s {args.__name__} is not exported"


@pytest.mark.subprocess
def test_importing_the_package_creates_nothing_and_loads_no_part():
    code = "import sys, components; print(sorted(m for m in sys.modules if m.startswith(('components', 'pulumi'))))"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True)
    assert result.stdout.strip() == "['components', 'components._lazy']"


def field_docs(args: type) -> dict[str, str]:
    """What documents each field of an args dataclass: the `#:` comment right above it, and the class docstring
    where it names the field; for a field an args class takes from the one it extends, that one's."""
    inherited: dict[str, str] = {}
    for base in reversed(args.__mro__[1:]):
        if dataclasses.is_dataclass(base):
            inherited.update(field_docs(base))
    return {**inherited, **_own_field_docs(args)}


def _own_field_docs(args: type) -> dict[str, str]:
    source = textwrap.dedent(inspect.getsource(args)).splitlines()
    docstring = inspect.getdoc(args) or ""
    fields = {field.name for field in dataclasses.fields(args)}
    docs: dict[str, str] = {}
    for index, line in enumerate(source):
        name = line.strip().split(":", 1)[0]
        if name not in fields or line.startswith((" " * 5, "#")):
            continue
        comment: list[str] = []
        above = index - 1
        while above > 0 and source[above].strip().startswith("#:"):
            comment.insert(0, source[above].strip()[2:].strip())
            above -= 1
        named = f"`{name}`" in docstring
        docs[name] = " ".join(comment) + (f" {docstring}" if named else "")
    return docs


def test_every_args_field_says_what_it_is_and_its_default():
    for name in components.__all__:
        if not name.endswith("Args"):
            continue
        args = getattr(components, name)
        docs = field_docs(args)
        assert set(docs) == {field.name for field in dataclasses.fields(args)}, name
        assert inspect.getdoc(args), f"{name} has no docstring"
        for field in dataclasses.fields(args):
            assert docs[field.name].strip(), f"{name}.{field.name} says nothing of itself"
            has_default = field.default is not dataclasses.MISSING or field.default_factory is not dataclasses.MISSING
            if has_default:
                assert re.search(r"default|none", docs[field.name], re.IGNORECASE), f"{name}.{field.name}: default?"


@pytest.mark.parametrize(
    "package", ["components", "components.identity", "components.identity.roles", "components.identity.irsa"]
)
def test_the_names_before_0_4_still_import_with_a_deprecation_warning(package):
    """Code written against 0.3 (`from eks_ml_platform import IrsaRole`) keeps working, and is told the new name."""
    module = importlib.import_module(package)
    for old, new in (("IrsaRole", "WorkloadRole"), ("IrsaRoleArgs", "WorkloadRoleArgs")):
        with pytest.warns(DeprecationWarning, match="is deprecated") as caught:
            assert getattr(module, old) is getattr(components, new)
        said = [str(warning.message) for warning in caught]
        assert any(message.startswith(f"{old} is deprecated: use {new} ") for message in said), said
        if package == "components.identity.irsa":  # the module itself moved in 0.5 and says so too
            assert f"components.identity.irsa.{old} is deprecated: import it from components.identity.roles" in said
    assert "IrsaRole" not in components.__all__


def test_cluster_handle_irsa_role_still_makes_the_role_with_a_deprecation_warning(monkeypatch):
    from components.cluster.handle import ClusterHandle

    made = []
    monkeypatch.setattr(ClusterHandle, "workload_role", lambda self, name, **kwargs: made.append((name, kwargs)))
    with pytest.warns(DeprecationWarning, match="use workload_role"):
        object.__new__(ClusterHandle).irsa_role("r", namespace="n", service_account="s")
    assert made == [("r", {"namespace": "n", "service_account": "s"})]


#: The public names of 0.4's program modules, which moved to `components/platform/` after it.
PROGRAM_NAMES_OF_0_4 = {
    "components.identity.irsa": (
        "FORMER_TYPE",
        "IRSA_ANNOTATION",
        "NODE_MANAGED_POLICIES",
        "PodIdentityTarget",
        "TYPE",
        "WorkloadRole",
        "WorkloadRoleArgs",
        "aws_managed_policy_arn",
        "node_role",
    ),
    "components.stack": (
        "PART_NAMES",
        "Platform",
        "adopted_from_part",
        "alb_client_secret",
        "build_platform",
        "connector_secrets",
        "export_outputs",
        "export_team_contract",
        "kubeflow_objects",
        "load_config",
        "part_options",
        "program",
        "raw_config",
    ),
    "components.platform_config": (
        "ALB_AUTH_PATH",
        "AWS_KEYS",
        "AlertThresholds",
        "AlertmanagerConfig",
        "BinPackingScheduler",
        "BucketConfig",
        "CONTEXT_KEYS",
        "ClusterConfig",
        "ConfigError",
        "ConfigIssue",
        "ControlPlaneLog",
        "DataRepository",
        "EndpointAccess",
        "Environment",
        "ExistingVpc",
        "FsxConfig",
        "GpuAdmission",
        "GpuConfig",
        "Identity",
        "IngressConfig",
        "KUBEFLOW_KUBERNETES_VERSIONS",
        "KarpenterConfig",
        "MigOptions",
        "NatGateways",
        "NetworkConfig",
        "ObservabilityConfig",
        "PROJECT_NAMESPACE",
        "PlatformConfig",
        "StatefulResources",
        "StorageConfig",
        "SystemNodeGroup",
        "environment_defaults",
        "named_secret_keys",
        "parse_config",
        "secret_problems",
    ),
}


@pytest.mark.parametrize("module", sorted(PROGRAM_NAMES_OF_0_4))
def test_the_program_modules_of_0_4_still_import_with_a_deprecation_warning(module):
    """A 0.4 program (`from eks_ml_platform.stack import program`, `...platform_config import parse_config`) keeps
    working, and is told where each name lives now."""
    old = importlib.import_module(module)
    for name in PROGRAM_NAMES_OF_0_4[module]:
        with pytest.warns(DeprecationWarning, match=rf"^{module}\.{name} is deprecated: import it from ") as told:
            value = getattr(old, name)
        new_home = str(told[0].message).rsplit(" ", 1)[-1]
        assert new_home != module
        assert value is getattr(importlib.import_module(new_home), name), name
    with pytest.raises(AttributeError):
        old.no_such_name  # noqa: B018
