"""A new add-on is its folder, its pin and one line in `ADD_ONS`: docs/layout.md's example, run on the dev stack,
is installed in a namespace of its own with its policies, sized on the system nodes, goes on destroy while the
clean-up controllers run, and may read Secrets everywhere where no other undeclared account may. cert-manager is
installed the same way."""

from __future__ import annotations

import re
import sys
import types
from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from components import versions
from components.certmanager.add_on import ADD_ON as CERT_MANAGER
from components.cluster.add_on import AddOn
from components.platform import config as platform_config
from components.platform.parse import parse_config
from components.tools.cluster_model import rules
from components.tools.cluster_model.platform import Platform
from components.tools.preview.inventory import Inventory
from tests.conftest import REPO, run_stack, stack_config

PAGE = REPO / "docs" / "layout.md"
NAMESPACE_TYPE = "kubernetes:core/v1:Namespace"
POLICY_TYPE = "kubernetes:networking.k8s.io/v1:NetworkPolicy"


def example_block(label: str) -> str:
    """The code block docs/layout.md shows under `<!-- add-on: label -->`."""
    match = re.search(rf"<!-- add-on: {re.escape(label)} -->\n```python\n(.*?)```", PAGE.read_text(), re.DOTALL)
    assert match, f"docs/layout.md has no example block {label!r}"
    return match.group(1)


@pytest.fixture(scope="module")
def reloader() -> Iterator[AddOn]:
    """The page's example as a folder of the package, with its pin among the pins and its line in `ADD_ONS`."""
    pin_namespace: dict[str, Any] = {"ChartPin": versions.ChartPin}
    exec(example_block("pin"), pin_namespace)  # noqa: S102 - the docs' own example, as a user would paste it
    package = types.ModuleType("components.reloader")
    package.__path__ = []
    module = types.ModuleType("components.reloader.add_on")
    module.__package__ = "components.reloader"
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(versions, "RELOADER", pin_namespace["RELOADER"], raising=False)
        patch.setitem(sys.modules, "components.reloader", package)
        patch.setitem(sys.modules, "components.reloader.add_on", module)
        exec(example_block("add_on.py"), module.__dict__)  # noqa: S102 - as above
        listed = example_block("line").split("=", 1)[1]
        names = {"CERT_MANAGER": CERT_MANAGER, "RELOADER": module.ADD_ON}
        *shipped, line = eval(listed, names)  # noqa: S307 - as above
        # The page shows `ADD_ONS` as it is, with the example's line added.
        assert [add_on for add_on, _ in shipped] == [add_on for add_on, _ in platform_config.ADD_ONS]
        patch.setattr(platform_config, "ADD_ONS", (*platform_config.ADD_ONS, line))
        yield module.ADD_ON


@pytest.fixture(scope="module")
def dev_with_reloader(reloader: AddOn, kubeflow_tree: None) -> Inventory:
    return run_stack("dev")


def _in_namespace(inventory: Inventory, type_: str, namespace: str) -> list[Any]:
    return [r for r in inventory.of_type(type_) if r.inputs.get("metadata", {}).get("namespace") == namespace]


@pytest.mark.stack
def test_the_example_is_installed_in_its_own_namespace_with_its_policies(dev_with_reloader: Inventory) -> None:
    namespace = dev_with_reloader.one(NAMESPACE_TYPE, "reloader-namespace")
    assert namespace.inputs["metadata"]["name"] == "reloader"
    assert namespace.inputs["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"
    policies = {p.inputs["metadata"]["name"] for p in _in_namespace(dev_with_reloader, POLICY_TYPE, "reloader")}
    assert {"deny-all", "allow-dns", "allow-prometheus"} <= policies, policies
    release = dev_with_reloader.release("reloader")
    assert (release.inputs["chart"], release.inputs["version"]) == ("reloader", "2.2.16")
    assert release.inputs["namespace"] == "reloader"
    assert release.inputs["repositoryOpts"]["repo"] == "https://stakater.github.io/stakater-charts"
    # Its pods run on the system nodes, the only place the sizing counts them.
    deployment = release.inputs["values"]["reloader"]["deployment"]
    assert deployment["nodeSelector"] == {"eksml.io/node-role": "system"}
    assert deployment["tolerations"][0]["key"] == "CriticalAddonsOnly"
    assert "eksml:reloader:Reloader" in release.urn


@pytest.mark.stack
def test_the_example_goes_on_destroy_before_what_cleans_up_and_the_nodes_it_runs_on(
    dev_with_reloader: Inventory,
) -> None:
    namespace = dev_with_reloader.one(NAMESPACE_TYPE, "reloader-namespace")
    release = dev_with_reloader.release("reloader")
    # The namespace goes while the load balancer controller still runs, so what was put there is cleaned up in AWS.
    assert dev_with_reloader.depends_on(namespace, dev_with_reloader.release("aws-load-balancer-controller"))
    # The release waits for the system nodes, and goes before them.
    node_group = dev_with_reloader.one("aws:eks/nodeGroup:NodeGroup")
    assert dev_with_reloader.depends_on(release, node_group)


def test_the_system_node_sizing_counts_the_example_s_pods(reloader: AddOn) -> None:
    config = parse_config(stack_config("dev"), project="eks-ml-platform", stack="dev")
    workloads = {w.name: w for w in config.system_capacity.workloads}
    assert workloads["reloader"].requests == reloader.workloads[0].requests
    without = platform_config.ADD_ONS[:-1]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(platform_config, "ADD_ONS", without)
        before = config.system_capacity.requests
    assert config.system_capacity.requests == before + reloader.workloads[0].requests


def _binding(subject: tuple[str, str]) -> list[tuple[str, dict[str, Any]]]:
    """A ClusterRole that lists, gets and watches every Secret, bound to a service account (as Reloader's chart
    binds its own when it watches every namespace)."""
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": "secrets-everywhere"},
        "rules": [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["list", "get", "watch"]}],
    }
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": "secrets-everywhere"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "secrets-everywhere"},
        "subjects": [{"kind": "ServiceAccount", "namespace": subject[0], "name": subject[1]}],
    }
    return [("release", role), ("release", binding)]


def _secret_findings(subject: tuple[str, str]) -> list[str]:
    return [p.message for p in rules.secrets_stay_with_their_holders(Platform(objects=_binding(subject)))]


def test_the_model_allows_the_example_s_secret_reader_and_no_other(reloader: AddOn) -> None:
    assert _secret_findings(("reloader", "reloader")) == []
    assert _secret_findings(("reloader", "something-else")) != []


def test_an_add_on_cannot_declare_a_secret_reader_outside_its_namespace(reloader: AddOn) -> None:
    fields: Mapping[str, Any] = {**reloader.__dict__, "secret_readers": {"kube-system/reloader": "why"}}
    with pytest.raises(ValueError, match=r"\['kube-system/reloader'\] are not in its namespace reloader"):
        AddOn(**fields)


def test_the_page_counts_the_lines_of_the_change() -> None:
    shown = sum(len(example_block(label).splitlines()) for label in ("add_on.py", "pin"))
    lines = shown + 2  # the line in `ADD_ONS` and its import
    assert f"That is the whole change: {lines} lines" in " ".join(PAGE.read_text().split())


@pytest.mark.stack
def test_cert_manager_is_an_add_on_the_program_installs_the_same_way(dev: Inventory) -> None:
    namespace = dev.one(NAMESPACE_TYPE, "cert-manager-namespace")
    release = dev.release("cert-manager")
    assert "eksml:certmanager:CertManager" in release.urn
    assert "eksml:certmanager:CertManager" in namespace.urn
    assert dev.depends_on(namespace, dev.release("aws-load-balancer-controller"))
    assert {p.inputs["metadata"]["name"] for p in _in_namespace(dev, POLICY_TYPE, "cert-manager")} >= {
        "deny-all",
        "allow-webhooks",
    }
