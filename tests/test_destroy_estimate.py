"""The destroy estimate models the engine's delete schedule, and agrees with an independent simulator of it."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from components.tools.preview.destroy_estimate import estimate
from components.tools.preview.inventory import Inventory, Recorded
from tests.conftest import REPO

#: A reference simulator of the engine's schedule with its own sourced durations, kept beside the repository.
DAGSIM = REPO.parent / "shared" / "tools" / "dagsim"


def res(name, type_, deps=(), deleted_with=None, parent=None, retain=False):
    return Recorded(
        urn=name,
        type=type_,
        name=name,
        parent=parent,
        inputs={},
        dependencies=tuple(deps),
        protect=False,
        retain_on_delete=retain,
        deleted_with=deleted_with,
    )


def names(result):
    return [sorted(r.name for r in b.resources) for b in result.batches]


def test_levels_are_peeled_from_the_bottom_and_reversed_as_the_engine_does():
    vpc = res("vpc", "aws:ec2/vpc:Vpc")
    cluster = res("cluster", "aws:eks/cluster:Cluster", ["vpc"])
    nodes = res("nodes", "aws:eks/nodeGroup:NodeGroup", ["cluster"])
    fs = res("fs", "aws:fsx/lustreFileSystem:LustreFileSystem", ["vpc"])
    result = estimate(Inventory([vpc, cluster, nodes, fs], {}))
    # The file system depends only on the VPC: the engine deletes it as late as that allows, beside the cluster,
    # not beside the node group (nothing depends on either of the two).
    assert names(result) == [["nodes"], ["cluster", "fs"], ["vpc"]]
    assert result.seconds == 360 + 300 + 6
    assert [r.name for _, r in result.critical_path()] == ["nodes", "fs", "vpc"]
    assert [r.name for r in result.longest_chain()] == ["nodes", "cluster", "vpc"]


def test_what_goes_with_its_target_keeps_its_level_but_takes_no_time():
    cluster = res("cluster", "aws:eks/cluster:Cluster")
    nodes = res("nodes", "aws:eks/nodeGroup:NodeGroup", ["cluster"])
    pool = res("pool", "kubernetes:karpenter.sh/v1:NodePool", ["nodes"])
    namespace = res("ns", "kubernetes:core/v1:Namespace", ["pool"], deleted_with="cluster")
    kept = res("log", "aws:cloudwatch/logGroup:LogGroup", ["cluster"], retain=True)
    result = estimate(Inventory([cluster, nodes, pool, namespace, kept], {}))
    # The namespace still waits for nothing and holds the pool back a level (its edges stay); it costs nothing.
    assert names(result) == [["ns"], ["pool"], ["log", "nodes"], ["cluster"]]
    assert [b.seconds for b in result.batches] == [0, 120, 360, 180]
    assert [r.name for r in result.skipped] == ["ns"]


def test_a_parent_goes_after_its_children_and_depending_on_a_component_is_depending_on_its_children():
    component = res("net", "eksml:network:Network")
    vpc = res("vpc", "aws:ec2/vpc:Vpc", parent="net")
    subnet = res("subnet", "aws:ec2/subnet:Subnet", ["vpc"], parent="net")
    cluster = res("cluster", "aws:eks/cluster:Cluster", ["net"])
    result = estimate(Inventory([component, vpc, subnet, cluster], {}))
    assert names(result) == [["cluster"], ["subnet"], ["vpc"], ["net"]]


def test_a_level_with_more_slow_deletes_than_workers_takes_longer():
    pools = [res(f"pool-{i}", "kubernetes:karpenter.sh/v1:NodePool") for i in range(3)]
    assert estimate(Inventory(pools, {}), parallel=2).seconds == 240
    assert estimate(Inventory(pools, {})).seconds == 120


def test_a_cycle_is_reported():
    a = res("a", "aws:ec2/vpc:Vpc", ["b"])
    b = res("b", "aws:ec2/vpc:Vpc", ["a"])
    with pytest.raises(ValueError, match="cycle"):
        estimate(Inventory([a, b], {}))


def _dagsim_minutes(inventory, tmp_path) -> tuple[int, float]:
    resources = tmp_path / "resources.json"
    resources.write_text(json.dumps({"resources": [r.as_json() for r in inventory.resources]}))
    run = subprocess.run(
        [sys.executable, str(DAGSIM / "dagsim.py"), str(resources), "--durations", str(DAGSIM / "durations.yaml")],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    found = re.search(r"engine schedule: (\d+) antichain levels, ([\d.]+) min", run.stdout)
    assert found, run.stdout[-2000:]
    return int(found[1]), float(found[2])


@pytest.mark.stack
@pytest.mark.subprocess
@pytest.mark.skipif(not (DAGSIM / "dagsim.py").is_file(), reason="../shared/tools/dagsim is not beside the repository")
@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_the_estimate_agrees_with_the_reference_simulator_within_a_minute(stack, request, tmp_path):
    inventory = request.getfixturevalue(stack)
    levels, minutes = _dagsim_minutes(inventory, tmp_path)
    ours = estimate(inventory)
    assert abs(ours.seconds / 60 - minutes) <= 1.0, (ours.seconds / 60, minutes)
    # the simulator counts the stack itself as a last level of its own
    assert len(ours.batches) + 1 == levels
    # The target: a dev stack torn down in about a quarter of an hour, by both. Half a minute over it is the
    # metrics adapter's uninstall, which must come before its namespace's delete (its release record is there).
    if stack == "dev":
        assert ours.seconds <= 15.5 * 60
        assert minutes <= 15.5
