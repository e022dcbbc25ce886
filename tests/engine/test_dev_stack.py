"""The dev stack, deployed for real: the Pulumi engine puts its in-cluster layer into a real Kubernetes 1.35 API
server (the box), finds nothing to change on a second preview and on refresh, runs every platform pod where the
platform model says, and destroys it to nothing.

What is real: the Pulumi CLI and engine, the Kubernetes provider, Helm (inside the provider), etcd, the API server
with its admission chain, the controller manager (Deployments, ReplicaSets, Jobs, namespace and garbage
collection), the scheduler. What stands in: `aws`, `eks` and `random` (engine/providers, answering as the mocks do
with the providers' own checks), and kwok for the kubelets. docs/engine.md lists each difference.

The steps run in file order on one deployment (module fixtures), as a user runs them.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from components.tools.cluster_model import platform as model
from engine import placement
from engine.cluster import Box
from engine.kube import Kube, KubeError
from engine.stack import REPO, Deployment, boxed_stack, charts_folder
from tests.engine.conftest import Timings

pytestmark = [pytest.mark.engine, pytest.mark.subprocess]

#: Namespaces the API server makes itself; every other one is the stack's.
_SYSTEM_NAMESPACES = {"default", "kube-node-lease", "kube-public", "kube-system"}


class Run:
    def __init__(self, box: Box, kube: Kube, deployment: Deployment, preview: Path) -> None:
        self.box, self.kube, self.deployment, self.preview = box, kube, deployment, preview


@pytest.fixture(scope="module")
def run(
    engine_bin: Path, dev_preview: Path, tmp_path_factory: pytest.TempPathFactory, timings: Timings
) -> Iterator[Run]:
    folder = tmp_path_factory.mktemp("engine")
    box = Box(engine_bin, folder / "box")
    try:
        with timings.timed("start the box (etcd, control plane, kwok)"):
            kube, deployment = boxed_stack(box, dev_preview, engine_bin, folder)
        with timings.timed("pulumi login, stack init, config"):
            deployment.prepare()
        with timings.timed("pulumi up"):
            deployment.up()
        yield Run(box, kube, deployment, dev_preview)
    finally:
        box.stop()


def test_the_box_has_only_loopback_and_no_route_anywhere_else(run: Run) -> None:
    """The network rule: inside the namespace every process of the tier runs in, only `lo` exists, and a
    connection to any other address (a pod's, a private range's, a public one) fails at once without a packet."""
    links = run.box.run(["ip", "-o", "link", "show"], timeout=30).stdout
    assert [line.split(":")[1].strip() for line in links.splitlines()] == ["lo"]
    probe = (
        "import socket, errno\n"
        "for address in ('10.244.0.5', '172.20.0.1', '192.168.1.1', '8.8.8.8'):\n"
        "    s = socket.socket(); s.settimeout(2)\n"
        "    try: s.connect((address, 443)); print('connected', address)\n"
        "    except OSError as e: print(address, e.errno == errno.ENETUNREACH)\n"
    )
    answers = run.box.run([sys.executable, "-c", probe], timeout=30).stdout.split()
    assert answers == ["10.244.0.5", "True", "172.20.0.1", "True", "192.168.1.1", "True", "8.8.8.8", "True"]


def test_up_creates_every_object_of_the_stack_in_the_api_server(run: Run) -> None:
    objects = _own_objects(run.deployment)
    assert len(objects) > 400  # the dev stack's own objects, Kubeflow's among them
    missing = []
    for obj in objects:
        meta = obj["metadata"]
        args = ["get", f"{obj['kind']}.{obj['apiVersion'].split('/')[0]}" if "/" in obj["apiVersion"] else obj["kind"]]
        args += [meta["name"], "-o", "name"]
        if meta.get("namespace"):
            args += ["-n", meta["namespace"]]
        try:
            run.kube.kubectl(*args)
        except Exception as error:  # noqa: BLE001 - collect every miss, then fail once
            missing.append(f"{obj['kind']} {meta.get('namespace', '')}/{meta['name']}: {error}")
    assert not missing, "\n".join(missing[:20])


def test_helm_releases_are_deployed(run: Run) -> None:
    releases = [r for r in run.deployment.resources() if r["type"] == "kubernetes:helm.sh/v3:Release"]
    assert len(releases) == 9
    statuses = {r["outputs"]["name"]: r["outputs"]["status"]["status"] for r in releases}
    assert set(statuses.values()) == {"deployed"}, statuses


def test_every_platform_pod_runs_where_the_platform_model_says(run: Run) -> None:
    """Each pod the real controllers made, placed by the real scheduler, is Running and Ready (a Job's: done) on a
    kind of node the model says it lands on; and each workload the model expects has its pods."""
    platform = model.load([run.preview], charts_folder())
    judgement = placement.judge(
        platform, run.kube.items("pods"), run.kube.items("nodes"), run.kube.items("replicasets")
    )
    assert judgement.problems == []
    assert judgement.absent == []
    assert judgement.judged > 60


def test_a_config_value_that_starts_with_a_dash_is_set_as_the_value(run: Run) -> None:
    """The tier sets generated secrets, and one in 64 starts with `-`: the real CLI must take it as the value, not
    as a flag. Set on a key outside the project's namespace, read back, and removed."""
    key, value = "engine-probe:secret", "-phf-dash-first"
    try:
        run.deployment.set_config(key, value, "--secret")
        got = run.deployment.pulumi("config", "get", "--", key, timeout=120).stdout.strip()
        assert got == value
    finally:
        run.deployment.pulumi("config", "rm", "--", key, timeout=120, check=False)


#: The team stack of the docs (docs/team-stacks.md), on the dev platform: a Profile, a queue, a quota, a claim.
TEAM_STACK = REPO / "examples" / "team-stack"


def _own_objects(deployment: Deployment) -> list[dict[str, Any]]:
    """The Kubernetes objects a deployment's state says it made itself (not those inside Helm releases)."""
    objects = []
    for resource in deployment.resources():
        type_ = resource["type"]
        if not type_.startswith("kubernetes:") or type_.startswith("kubernetes:helm.sh"):
            continue
        outputs = resource.get("outputs") or {}
        if "kind" in outputs and "metadata" in outputs:
            objects.append(outputs)
    return objects


def test_a_team_stack_comes_and_goes_through_a_stack_reference(run: Run, timings: Timings) -> None:
    """The docs' team stack, deployed with its own `pulumi up` beside the platform's: it reads the platform through
    a real StackReference (same backend), reaches the cluster with the kubeconfig it builds from those outputs (its
    token from `aws eks get-token`, as an admin principal), and makes its namespace, quota, queue and Profile. Its
    destroy removes exactly those; the platform's preview and refresh, next, find nothing changed."""
    platform = run.deployment
    team = Deployment(
        box=run.box,
        bin_dir=platform.bin_dir,
        plugin_dirs=platform.plugin_dirs,
        folder=platform.folder.parent / "team",
        aws_endpoint=platform.aws_endpoint,
        source=TEAM_STACK,
        # The file backend's stacks are `organization/<project>/<stack>`; the example names its own organization.
        config={"team-vision:platformStack": "organization/eks-ml-platform/dev"},
        backend=platform.state_dir,
    )
    with timings.timed("team stack: stack init, config"):
        team.prepare()
    with timings.timed("team stack: pulumi up"):
        team.up()
    outputs = team.outputs()
    assert outputs["namespace"] == "vision"
    assert outputs["kubeflowProfile"] == "vision"
    made = _own_objects(team)
    kinds = {o["kind"] for o in made}
    assert {"Namespace", "ResourceQuota", "LocalQueue", "ClusterQueue", "Profile", "PersistentVolumeClaim"} <= kinds
    present = _present(run, made)
    assert len(present) == len(made), sorted({_key(o) for o in made} - present)
    assert run.kube.items("resourcequotas", namespace="vision")

    with timings.timed("team stack: pulumi destroy"):
        team.destroy()
    assert [r["type"] for r in team.resources() if r["type"] != "pulumi:pulumi:Stack"] == []
    assert _present(run, made) == set()


def test_second_preview_finds_no_changes(run: Run, timings: Timings) -> None:
    """After `up`, and after a team stack came and went beside it: the platform's own preview changes nothing."""
    with timings.timed("pulumi preview --expect-no-changes"):
        run.deployment.preview_no_changes()


def test_refresh_finds_no_changes(run: Run, timings: Timings) -> None:
    """The API server holds what the state says, after the team stack too: refresh finds nothing changed."""
    with timings.timed("pulumi refresh --expect-no-changes"):
        run.deployment.refresh("--expect-no-changes")


def _key(obj: dict[str, Any]) -> tuple[str, str, str]:
    return (_kind(obj), obj["metadata"].get("namespace", ""), obj["metadata"]["name"])


def _present(run: Run, objects: list[dict[str, Any]]) -> set[tuple[str, str, str]]:
    """Which of these objects the API server still holds: (kind.group, namespace, name)."""
    kinds = {_kind(o) for o in objects}
    present = set()
    for kind in sorted(kinds):
        try:
            listed = json.loads(run.kube.kubectl("get", kind, "-A", "-o", "json"))["items"]
        except KubeError:  # the kind is gone with its CRD
            continue
        present |= {(kind, o["metadata"].get("namespace", ""), o["metadata"]["name"]) for o in listed}
    return present & {(_kind(o), o["metadata"].get("namespace", ""), o["metadata"]["name"]) for o in objects}


def _kind(obj: dict[str, Any]) -> str:
    api_version = obj["apiVersion"]
    return f"{obj['kind']}.{api_version.split('/')[0]}" if "/" in api_version else obj["kind"]


def test_destroy_leaves_nothing_in_the_state_and_deletes_every_object_it_owns(run: Run, timings: Timings) -> None:
    """After `pulumi destroy` the state is empty, every namespace the stack made is gone (and so everything in
    them), and every object the stack deletes on its own is gone from the API server. What is left are the
    cluster-scoped objects the stack lets go with the EKS cluster (`deleted_with`; docs/teardown.md) and the CRDs of
    Helm charts (Helm never deletes a chart's CRDs): the fake EKS cluster's delete does not empty the box's API
    server, as deleting the real cluster would. Namespaces the stack lets go with the cluster (their controllers
    clear what other namespaces hold to the end) are left with their pods, for the same reason."""
    cluster = next(r["urn"] for r in run.deployment.resources() if r["type"] == "eks:index:Cluster")
    by_key, with_cluster = {}, set()
    for resource in run.deployment.resources():
        outputs = resource.get("outputs") or {}
        if not resource["type"].startswith("kubernetes:") or "kind" not in outputs or "metadata" not in outputs:
            continue
        key = (_kind(outputs), outputs["metadata"].get("namespace", ""), outputs["metadata"]["name"])
        by_key[key] = outputs
        if resource.get("deletedWith") == cluster:
            with_cluster.add(key)
    assert len(with_cluster) > 300  # the design: most in-cluster objects go with the cluster
    with timings.timed("pulumi destroy"):
        run.deployment.destroy()
    assert [r["type"] for r in run.deployment.resources() if r["type"] != "pulumi:pulumi:Stack"] == []
    # Namespaces whose controllers must outlive every other namespace (Kueue's, KServe's: their finalizers and
    # aggregated APIs) go with the cluster too, and their pods with them.
    last = {k[2] for k in with_cluster if k[0].startswith("Namespace")}
    namespaces = {n["metadata"]["name"] for n in run.kube.items("namespaces")}
    assert namespaces <= _SYSTEM_NAMESPACES | last, sorted(namespaces - _SYSTEM_NAMESPACES - last)
    pods = [p["metadata"] for p in run.kube.items("pods")]
    assert [p["name"] for p in pods if p["namespace"] not in {"kube-system", *last}] == []
    left = _present(run, list(by_key.values()))
    assert sorted(k for k in left if k not in with_cluster) == []
