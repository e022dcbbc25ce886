"""What a delete waits for (claim protection, controllers' finalizers, API discovery), checked against the destroy
order of the recorded graph (`components.tools.preview.teardown_waits`): a full `pulumi destroy` never waits on a
finalizer that only something deleted later can clear."""

from __future__ import annotations

import dataclasses
import json

import pytest

from components.tools.preview.destroy_estimate import teardown_problems as problems
from components.tools.preview.inventory import Inventory

from .conftest import PROJECT, run_stack, stack_config

pytestmark = pytest.mark.stack


@pytest.fixture(params=["dev", "prod"])
def stack(request):
    return request.getfixturevalue(request.param)


def test_no_delete_of_a_full_destroy_waits_on_what_is_deleted_after_it(stack):
    assert [str(p) for p in problems(stack)] == []
    # what the checks cover, so that they cannot pass empty: Kubeflow's claims, a team namespace of Kueue and
    # KServe's, the adapter's and Kueue's APIServices
    claims = [r.name for r in stack.of_type("kubernetes:core/v1:PersistentVolumeClaim")]
    assert "kubeflow-persistentvolumeclaim-kubeflow-mysql-pv-claim" in claims
    assert {r.inputs["name"] for r in stack.of_type("kubernetes:helm.sh/v3:Release")} >= {"kueue", "prometheus-adapter"}


def test_every_kubeflow_component_and_kserve_on_leaves_no_delete_waiting():
    raw = json.loads(stack_config("dev")[f"{PROJECT}:kubeflow"])
    raw["components"] = dict.fromkeys(("katib", "spark", "knative", "hub", "kserve"), True)
    raw["hubRegistryTeam"] = next(iter(raw["teams"]))
    inventory = run_stack("dev", {"kubeflow": raw})
    assert [str(p) for p in problems(inventory)] == []
    assert any(r.name.endswith("katib-controller") for r in inventory.of_type("kubernetes:apps/v1:Deployment"))
    assert any(r.inputs["name"] == "kserve" for r in inventory.of_type("kubernetes:helm.sh/v3:Release"))


def _changed(inventory: Inventory, name: str, **changes) -> Inventory:
    found = [r for r in inventory.resources if r.name == name]
    assert len(found) == 1, name
    return Inventory(
        [dataclasses.replace(r, **changes) if r is found[0] else r for r in inventory.resources],
        inventory.stack_outputs,
    )


def _without_edge(inventory: Inventory, name: str, to: str) -> Inventory:
    (resource,) = [r for r in inventory.resources if r.name == name]
    (target,) = [r for r in inventory.resources if r.name == to and r.urn in resource.dependencies]
    return _changed(inventory, name, dependencies=tuple(d for d in resource.dependencies if d != target.urn))


@pytest.mark.parametrize(
    ("stack_name", "seed", "subject", "finalizer"),
    [
        # Karpenter clears the pool's nodes' finalizer: the pool goes while the controller runs
        (
            "dev",
            lambda i: _without_edge(i, "karpenter-pool-cpu-general", "karpenter"),
            "karpenter-pool-cpu-general",
            "karpenter.sh/termination",
        ),
        # a claim deleted on its own waits for the pods of MySQL, which go only with the namespace
        (
            "dev",
            lambda i: _changed(i, "kubeflow-persistentvolumeclaim-kubeflow-mysql-pv-claim", deleted_with=None),
            "kubeflow-persistentvolumeclaim-kubeflow-mysql-pv-claim",
            "kubernetes.io/pvc-protection",
        ),
        # Kueue's namespace deleted on its own (as before): its APIService outlives its pods
        (
            "dev",
            lambda i: _changed(i, "kueue-namespace", deleted_with=None),
            "cert-manager-namespace",
            "API discovery of kueue's APIService",
        ),
        # the adapter left to the cluster (as before): the monitoring namespace's delete stops it, its APIService stays
        (
            "dev",
            lambda i: _changed(i, "observability-metrics-adapter", deleted_with=i.one("eks:index:Cluster").urn),
            "observability-namespace",
            "API discovery of prometheus-adapter's APIService",
        ),
        # KServe's namespace deleted on its own (as before): a team's InferenceServices keep their finalizer
        (
            "prod",
            lambda i: _changed(i, "kserve-namespace", deleted_with=None),
            "kubeflow-namespace-research",
            "inferenceservice.finalizers",
        ),
    ],
)
def test_a_missing_order_is_caught_naming_the_object_and_its_finalizer(request, stack_name, seed, subject, finalizer):
    inventory = request.getfixturevalue(stack_name)
    assert problems(inventory) == []
    found = [str(p) for p in problems(seed(inventory))]
    assert any(f" {subject}: " in p and finalizer in p for p in found), found
