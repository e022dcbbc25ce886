"""Upgrading Kubeflow from the pinned 26.03.1 to a next patch release: both pins previewed against one recorded
state (the dev stack as deployed with 26.03.1), and what `pulumi up` would create, delete, update and replace.

The next patch is made here: the pinned subset copied, one image tag and one ConfigMap value changed, and the
digests moved with them (what a real pin bump does to `tree_digests.json`)."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import shutil
from pathlib import Path

import pytest

from components.kubeflow import tree_digests
from components.tools.preview.inventory import Inventory, Recorded
from components.tools.preview.upgrade import plan

from .conftest import KUBEFLOW_TREE, PROJECT, run_stack, stack_config

_DASHBOARD = "community-distribution/applications/dashboard/upstream/centraldashboard/base"
KUSTOMIZATION = f"{_DASHBOARD}/kustomization.yaml"
PARAMETERS = f"{_DASHBOARD}/params.env"
#: The dashboard's image in 26.03.1, and the tag of the made-up next patch.
PINNED_TAG, NEXT_TAG = "newTag: v2.0.0", "newTag: v2.0.1"


@pytest.fixture(scope="module")
def next_patch(tmp_path_factory) -> tuple[Path, dict[str, str]]:
    """A copy of the pinned tree with the dashboard's image tag moved and one of its parameters changed, and the
    digests of that tree."""
    root = tmp_path_factory.mktemp("kubeflow-next") / "tree"
    shutil.copytree(KUBEFLOW_TREE, root)
    kustomization = root / KUSTOMIZATION
    assert PINNED_TAG in kustomization.read_text()
    kustomization.write_text(kustomization.read_text().replace(PINNED_TAG, NEXT_TAG))
    parameters = root / PARAMETERS
    assert "COLLECT_METRICS=true" in parameters.read_text()
    parameters.write_text(parameters.read_text().replace("COLLECT_METRICS=true", "COLLECT_METRICS=false"))
    files = dict(tree_digests.FILES)
    for relative in (KUSTOMIZATION, PARAMETERS):
        files[relative] = hashlib.sha256((root / relative).read_bytes()).hexdigest()
    return root, files


@pytest.fixture(scope="module")
def upgraded(next_patch) -> Inventory:
    """The dev stack previewed with the next patch's tree and digests."""
    root, files = next_patch
    kubeflow = json.loads(stack_config("dev")[f"{PROJECT}:kubeflow"])
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(tree_digests, "FILES", files)
        return run_stack("dev", {"kubeflow": {**kubeflow, "tree": str(root)}})


def named(inventory: Inventory, urns, suffix: str) -> list[str]:
    return [u for u in urns if u.endswith(suffix)]


@pytest.mark.stack
def test_the_next_patch_updates_what_changed_in_place_and_creates_deletes_or_replaces_nothing(dev, upgraded):
    upgrade = plan(dev, upgraded)
    assert upgrade.create == ()
    assert upgrade.delete == ()
    assert upgrade.replace == ()
    assert upgrade.unmodelled == ()
    assert sorted(u.rsplit("::", 1)[1] for u in upgrade.update) == [
        "kubeflow-configmap-kubeflow-dashboard-parameters",
        "kubeflow-deployment-kubeflow-dashboard",
    ]
    deployment = upgraded.by_urn(named(upgraded, upgrade.update, "deployment-kubeflow-dashboard")[0])
    (container,) = deployment.inputs["spec"]["template"]["spec"]["containers"]
    assert container["image"] == "ghcr.io/kubeflow/dashboard/dashboard:v2.0.1"


@pytest.mark.stack
def test_without_the_providers_mutable_flags_the_changed_configmap_would_be_replaced(dev, upgraded):
    """The flag is what keeps the ConfigMap: the same upgrade under a provider without it (pulumi-kubernetes'
    default) deletes and creates it."""
    providers = {r.urn for r in upgraded.of_type("pulumi:providers:kubernetes")}
    assert providers

    def without_flags(resource: Recorded) -> Recorded:
        if resource.urn not in providers:
            return resource
        inputs = {
            k: v for k, v in resource.inputs.items() if k not in ("enableConfigMapMutable", "enableSecretMutable")
        }
        return dataclasses.replace(resource, inputs=inputs)

    default_provider = Inventory([without_flags(r) for r in upgraded.resources], upgraded.stack_outputs)
    upgrade = plan(dev, default_provider)
    assert [u.rsplit("::", 1)[1] for u in upgrade.replace] == ["kubeflow-configmap-kubeflow-dashboard-parameters"]


@pytest.mark.stack
def test_every_kubernetes_provider_of_the_stack_updates_configmaps_and_secrets_in_place(dev):
    providers = dev.of_type("pulumi:providers:kubernetes")
    assert providers
    for provider in providers:
        assert provider.inputs.get("enableConfigMapMutable") in (True, "true"), provider.name
        assert provider.inputs.get("enableSecretMutable") in (True, "true"), provider.name
