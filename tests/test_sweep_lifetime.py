"""A sweep deletes only on `pulumi destroy`: a config change that stops needing it leaves it declared (an update at
most), the network sweep refuses while its cluster exists, and the sweeps' URNs do not move.

The engine is played here as it decides for the sweeps: a resource the new program declares under its URN (or an
alias of it) is diffed and updated; one it no longer declares is deleted in that same `pulumi up`, with its last
state; `pulumi destroy` deletes each, dependents first. The provider is loaded as the engine's dynamic-provider host
loads the one the state holds (`__provider`).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable
from typing import Any

import boto3
import dill
import pytest
from moto import mock_aws
from pulumi.dynamic.dynamic import serialize_provider

from components.sweep import Kind
from components.sweep.resource import SweepRefused, _SweepProvider
from components.tools.preview.inventory import Inventory, Recorded
from tests.conftest import PROJECT, run_stack, stack_config
from tests.sweep_world import REGION, World, build_world, present

SWEEP = "pulumi-python:dynamic:Resource"
DEV_CLUSTER = "eks-ml-platform-dev"  # the dev stack file names no cluster: project-stack

#: Every sweep of the two stacks, by URN. A sweep whose URN changes without an alias to the old one is deleted by
#: the next `pulumi up`, and its delete sweeps the live cluster: moving one needs `aliases=[<old URN>]`.
SWEEP_URNS = {
    stack: {
        f"urn:pulumi:{stack}::{PROJECT}::eksml:cluster:Cluster$pulumi-python:dynamic:Resource::cluster-sweep",
        f"urn:pulumi:{stack}::{PROJECT}::eksml:cluster:Cluster$pulumi-python:dynamic:Resource::cluster-network-sweep",
        f"urn:pulumi:{stack}::{PROJECT}::eksml:storage:Storage$pulumi-python:dynamic:Resource::storage-fsx-sweep",
    }
    for stack in ("dev", "prod")
}


def _state(resource: Recorded, vpc: str) -> dict[str, Any]:
    """The sweep's properties as the state holds them (create and update store their inputs), in the moto world's
    VPC instead of the mocks' made-up one."""
    return {**resource.inputs, "vpcId": vpc}


def _provider() -> Any:
    """The provider as the engine's dynamic-provider host loads it from the state (the mocks do not record it: it
    is a secret). dill stores the class by reference, so the host runs the installed code."""
    return dill.loads(base64.b64decode(serialize_provider(_SweepProvider())))  # noqa: S301 (serialized just here)


def _sweeps(inventory: Inventory) -> list[Recorded]:
    return inventory.of_type(SWEEP)


def engine_up(old: Inventory, new: Inventory, vpc: str) -> list[str]:
    """`pulumi up` from a stack deployed with `old` to the program `new`, for the sweeps; returns what it deleted."""
    state = {r.urn: _state(r, vpc) for r in _sweeps(old)}
    kept = set()
    for resource in _sweeps(new):
        matched = [urn for urn in (resource.urn, *new.alias_urns(resource)) if urn in state]
        if not matched:
            continue  # created: a sweep's create touches nothing
        olds, news = state[matched[0]], _state(resource, vpc)
        provider = _provider()
        diff = provider.diff(f"sweep-{olds['clusterName']}", olds, news)
        assert not diff.replaces, f"{resource.urn} would be replaced: {diff.replaces}"
        if diff.changes:
            provider.update(f"sweep-{olds['clusterName']}", olds, news)
        kept.add(matched[0])
    deleted = sorted(set(state) - kept)
    for urn in deleted:
        _provider().delete(f"sweep-{state[urn]['clusterName']}", state[urn])
    return deleted


def engine_destroy(inventory: Inventory, vpc: str) -> list[str]:
    """`pulumi destroy` of the sweeps, each after every sweep that depends on it; returns their names in order."""
    order = _dependents_first(inventory, _sweeps(inventory))
    for resource in order:
        props = _state(resource, vpc)
        _provider().delete(f"sweep-{props['clusterName']}", props)
    return [r.name for r in order]


def _dependents_first(inventory: Inventory, sweeps: Iterable[Recorded]) -> list[Recorded]:
    left, order = list(sweeps), []
    while left:
        ready = [r for r in left if not any(inventory.depends_on(other, r) for other in left if other is not r)]
        assert ready, "the sweeps depend on each other in a circle"
        order += ready
        left = [r for r in left if r not in ready]
    return order


@pytest.fixture(scope="module")
def dev_with_fsx_class(kubeflow_tree: None) -> Inventory:
    """dev as deployed with `storage.fsx.storageClass: true` (what the dev stack file then turns off)."""
    storage = json.loads(stack_config("dev")[f"{PROJECT}:storage"])
    storage["fsx"]["storageClass"] = True
    return run_stack("dev", {"storage": storage})


@pytest.fixture
def dev_world() -> Any:
    with mock_aws():
        yield build_world(DEV_CLUSTER, stack="dev")


@pytest.mark.stack
def test_turning_the_fsx_class_off_deletes_no_sweep_and_no_claims_file_system(dev_with_fsx_class, dev, dev_world):
    world: World = dev_world
    assert world.claims[Kind.FILE_SYSTEM], "the world holds a file system of a claim of the class"
    before = present(world.clients)

    deleted = engine_up(dev_with_fsx_class, dev, world.vpc)

    assert deleted == []
    assert present(world.clients) == before


@pytest.mark.stack
def test_destroy_still_sweeps_everything_including_claims_file_systems_the_class_left(dev, dev_world):
    world: World = dev_world

    order = engine_destroy(dev, world.vpc)

    assert sorted(order) == ["cluster-network-sweep", "cluster-sweep", "storage-fsx-sweep"]
    assert order[-1] == "cluster-network-sweep"  # after the cluster, which waits for the other two
    assert world.remaining(world.ours) == {}
    assert world.missing(world.theirs) == {}


@pytest.mark.stack
@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_every_sweep_keeps_its_urn_or_an_alias_to_it(stack, request):
    inventory = request.getfixturevalue(stack)
    pinned = SWEEP_URNS[stack]
    known = {urn for r in _sweeps(inventory) for urn in (r.urn, *inventory.alias_urns(r))}
    assert pinned <= known, f"sweeps moved without an alias: {sorted(pinned - known)}"
    for resource in _sweeps(inventory):
        # A new sweep is listed in SWEEP_URNS, so that moving it later is caught too.
        assert resource.urn in pinned or inventory.alias_urns(resource) & pinned, f"not in SWEEP_URNS: {resource.urn}"


@pytest.mark.stack
def test_the_network_sweep_refuses_while_its_cluster_exists_and_sweeps_once_it_is_gone(dev, dev_world):
    world: World = dev_world
    network_sweep = dev.one(SWEEP, "cluster-network-sweep")
    props = _state(network_sweep, world.vpc)
    eks = boto3.client("eks", region_name=REGION)
    role = f"arn:aws:iam::123456789012:role/{DEV_CLUSTER}-cluster"
    eks.create_cluster(name=DEV_CLUSTER, roleArn=role, resourcesVpcConfig={"subnetIds": list(world.subnets)})
    before = present(world.clients)

    with pytest.raises(SweepRefused, match="still exists"):
        _provider().delete("sweep", props)
    assert present(world.clients) == before

    eks.delete_cluster(name=DEV_CLUSTER)
    _provider().delete("sweep", props)
    assert world.names["guardduty_endpoint"] not in present(world.clients)[Kind.VPC_ENDPOINT]


def test_the_state_holds_the_provider_by_reference_so_a_delete_runs_the_installed_code():
    """What the module docstring promises: a fix to the provider (the refusal above) reaches stacks deployed before
    it, and renaming the class or its module would break their destroy."""
    serialized = base64.b64decode(serialize_provider(_SweepProvider()))
    assert b"components.sweep.resource" in serialized
    assert b"_SweepProvider" in serialized
    assert len(serialized) < 200  # a reference, not the pickled code
