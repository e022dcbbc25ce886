"""Registering staged objects: one Pulumi resource each, typed for built-in kinds, depends_on exactly as staged,
parented per stage, credentials and role ARNs resolved at the last moment."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pulumi
import pulumi_kubernetes as k8s
import pytest
from pulumi.runtime import mocks as pulumi_mocks
from pulumi.runtime import rpc
from pulumi.runtime.stack import run_pulumi_func
from pulumi.runtime.sync_await import _sync_await

from components import k8s_objects
from components.kubeflow import credentials, entries, plan, register, render, staging, teams
from components.kubeflow.credentials import Admin
from components.kubeflow.objects import BUILTIN, ObjectKey, group_of
from components.kubeflow.staging import Stage
from components.kubeflow.teams import Team

REFERENCE = Path(__file__).resolve().parents[1].parent / "shared" / "reference" / "kubeflow" / "26.03.1"
pytestmark = pytest.mark.skipif(not REFERENCE.is_dir(), reason="the reference Kubeflow tree is not next to the repo")
TEAM = Team(name="vision", owner="lead@example.org", gpu_ceiling=4, s3_prefix="teams/vision")
ROLE = "arn:aws:iam::123456789012:role/vision"


class Mocks(pulumi_mocks.Mocks):
    def new_resource(self, args):
        return f"{args.name}-id", args.inputs

    def call(self, args):
        raise AssertionError(f"unexpected call {args.token}")


class Recorder(pulumi_mocks.MockMonitor):
    def __init__(self, mocks):
        super().__init__(mocks)
        self.seen: dict[str, dict[str, Any]] = {}

    def RegisterResource(self, request):  # the gRPC method name
        response = super().RegisterResource(request)
        self.seen[request.name] = {
            "urn": response.urn,
            "type": request.type,
            "parent": request.parent,
            "dependencies": set(request.dependencies),
            "provider": request.provider,
            "inputs": rpc.deserialize_properties(request.object, keep_unknowns=True),
            "deleted_with": request.deletedWith,
        }
        return response


def run(program) -> dict[str, dict[str, Any]]:
    mocks = Mocks()
    monitor = Recorder(mocks)
    pulumi.runtime.settings.ROOT.set(None)
    pulumi.runtime.set_mocks(mocks, project="kubeflow-test", stack="test", preview=True, monitor=monitor)
    pulumi.runtime.settings.SETTINGS.outputs.clear()
    _sync_await(run_pulumi_func(program))
    return monitor.seen


@pytest.fixture(scope="module")
def staged(render_cache) -> list[staging.Staged]:
    rendered = render.render(REFERENCE, entries.DEFAULT, cache_dir=render_cache)
    return plan.build(rendered, plan.Settings(admin=Admin("platform@example.org"), storage_class="gp3", teams=(TEAM,)))


SECRETS = {name: f"generated-{name}" for name in credentials.NAMES}


@pytest.fixture(scope="module")
def seen(staged) -> dict[str, dict[str, Any]]:
    def program():
        provider = k8s.Provider("cluster", kubeconfig="{}")
        stages = {stage: pulumi.ComponentResource("test:kubeflow:Stage", f"stage-{int(stage)}") for stage in Stage}
        node_group = k8s.core.v1.ConfigMap(
            "node-group", metadata={"name": "stand-in"}, opts=pulumi.ResourceOptions(provider=provider)
        )
        csi = k8s.core.v1.ConfigMap(
            "csi-driver", metadata={"name": "stand-in-2"}, opts=pulumi.ResourceOptions(provider=provider)
        )
        register.register(
            staged,
            provider=provider,
            parent=stages,
            secrets=SECRETS,
            role_arns={"vision": ROLE},
            depends_on=[node_group],
            depends_on_by_kind={"PersistentVolumeClaim": [csi]},
        )

    return run(program)


def plain(value):
    """An input as the engine receives it, secrets unwrapped."""
    if isinstance(value, dict) and value.get(rpc._special_sig_key) == rpc._special_secret_sig:
        return value["value"]
    return value


@pytest.mark.stack
def test_every_object_is_one_resource_with_its_logical_name(staged, seen):
    for item in staged:
        assert item.name in seen, item.key


@pytest.mark.stack
def test_built_in_kinds_are_typed_and_others_custom_resources(staged, seen):
    for item in staged:
        api_version, kind = item.manifest["apiVersion"], item.manifest["kind"]
        token = f"kubernetes:{'core/v1' if api_version == 'v1' else api_version}:{kind}"
        assert seen[item.name]["type"] == token
    typed = {
        (group_of(s.manifest["apiVersion"]), s.manifest["kind"])
        for s in staged
        if (s.manifest["apiVersion"], s.manifest["kind"]) in k8s_objects._KINDS
    }
    assert typed == {
        (group_of(s.manifest["apiVersion"]), s.manifest["kind"])
        for s in staged
        if (group_of(s.manifest["apiVersion"]), s.manifest["kind"]) in BUILTIN
    }


def test_each_typed_class_registers_its_own_kind():
    for (_api_version, kind), cls in k8s_objects._KINDS.items():
        assert cls.__name__ == kind
        assert cls.__module__.startswith("pulumi_kubernetes."), cls


@pytest.mark.stack
def test_dependencies_are_exactly_the_staged_ones(staged, seen):
    names = {item.key: item.name for item in staged}
    urn_names = {record["urn"]: name for name, record in seen.items()}
    claim_namespaces = {item.key.namespace for item in staged if item.key.kind == "PersistentVolumeClaim"}
    for item in staged:
        recorded = {urn_names[urn] for urn in seen[item.name]["dependencies"]}
        expected = {names[d] for d in item.depends_on} or {"node-group"}
        # A claim, and the namespace it goes with on destroy, wait for the driver that deletes its volume.
        if item.key.kind == "PersistentVolumeClaim" or (
            item.key.kind == "Namespace" and item.key.name in claim_namespaces
        ):
            expected.add("csi-driver")
        assert recorded == expected, item.key


@pytest.mark.stack
def test_every_claim_goes_with_its_namespace_and_workloads_wait_for_their_claims(staged, seen):
    # Deleted on its own, a claim waits on its protection finalizer for the pods that mount it, which go with the
    # cluster: the engine tier's destroy waited on Kubeflow's MySQL and SeaweedFS claims until the delete timed out.
    urns = {name: record["urn"] for name, record in seen.items()}
    claims = [item for item in staged if item.key.kind == "PersistentVolumeClaim"]
    assert {c.key.name for c in claims} >= {"mysql-pv-claim", "seaweedfs-pvc"}
    for claim in claims:
        namespace = next(i for i in staged if i.key.kind == "Namespace" and i.key.name == claim.key.namespace)
        assert seen[claim.name]["deleted_with"] == urns[namespace.name], claim.key
    mysql = next(i for i in staged if i.key.kind == "Deployment" and i.key.name == "mysql")
    assert ObjectKey("", "PersistentVolumeClaim", "kubeflow", "mysql-pv-claim") in mysql.depends_on


@pytest.mark.stack
def test_each_object_is_a_child_of_its_stage_with_the_given_provider(staged, seen):
    stage_urns = {name: record["urn"] for name, record in seen.items() if record["type"] == "test:kubeflow:Stage"}
    for item in staged:
        assert seen[item.name]["parent"] == stage_urns[f"stage-{int(item.stage)}"]
        assert seen[item.name]["provider"].startswith(seen["cluster"]["urn"])


@pytest.mark.stack
def test_credentials_and_role_arns_are_resolved_and_nothing_else_is(staged, seen):
    dex = seen[next(s.name for s in staged if s.key.name == "dex-passwords")]["inputs"]
    assert plain(plain(dex["stringData"])["DEX_USER_PASSWORD"]) == SECRETS["admin_password_bcrypt"]
    profile = seen[next(s.name for s in staged if s.key.kind == "Profile")]["inputs"]
    assert profile["spec"]["plugins"][0]["spec"]["awsIamRole"] == ROLE
    assert "<<kubeflow-" not in repr([record["inputs"] for record in seen.values()])


def test_registration_refuses_a_missing_credential(staged):
    with pytest.raises(ValueError, match="no value given"):
        register.resolve(
            next(s.manifest for s in staged if s.key.name == "dex-passwords"), register.substitutions({}, {})
        )
    with pytest.raises(ValueError, match="no value given"):
        register.resolve(
            next(s.manifest for s in staged if s.key.kind == "Profile"), register.substitutions(SECRETS, {})
        )
    assert teams.role_arn_placeholder("vision") in repr(next(s.manifest for s in staged if s.key.kind == "Profile"))


def test_a_custom_resource_with_fields_besides_spec_is_refused():
    manifest = {"apiVersion": "example.org/v1", "kind": "Widget", "metadata": {"name": "a"}, "spec": {}, "data": {}}
    with pytest.raises(ValueError, match="fields besides spec"):
        k8s_objects.create("w", manifest, pulumi.ResourceOptions(), any_custom=True)


def test_every_built_in_kind_the_plan_knows_has_a_typed_class_and_none_becomes_a_custom_resource():
    typed = {(group_of(api_version), kind) for api_version, kind in k8s_objects._KINDS}
    assert set(BUILTIN) <= typed
    assert {group for group, _ in BUILTIN} <= k8s_objects.BUILTIN_GROUPS
    job = {"apiVersion": "batch/v2", "kind": "Job", "metadata": {"name": "a"}, "spec": {}}  # no typed class for it
    with pytest.raises(ValueError, match="no resource type for batch/v2 Job"):
        k8s_objects.create("j", job, pulumi.ResourceOptions(), any_custom=True)
    # The same check a plan runs before anything is created: by apiVersion, not only by group.
    autoscaler = {
        "apiVersion": "autoscaling/v1",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "a"},
        "spec": {},
    }
    with pytest.raises(ValueError, match="no resource type for autoscaling/v1 HorizontalPodAutoscaler"):
        k8s_objects.check(autoscaler, any_custom=True)
    service = {"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService", "metadata": {"name": "a"}, "spec": {}}
    with pytest.raises(ValueError, match="no resource type"):
        k8s_objects.check(service, any_custom=True)
