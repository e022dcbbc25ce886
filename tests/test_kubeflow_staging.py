"""The install order as data: stages, gate edges, object-to-object edges, await annotations, and a checker that
catches an order that would fail (seeded violations)."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from components.kubeflow import entries, plan, rbac, render, staging, teams
from components.kubeflow.credentials import Admin
from components.kubeflow.objects import ObjectKey
from components.kubeflow.staging import Stage
from components.kubeflow.teams import FsxShare, Team

REFERENCE = Path(__file__).resolve().parents[1].parent / "shared" / "reference" / "kubeflow" / "26.03.1"
pytestmark = pytest.mark.skipif(not REFERENCE.is_dir(), reason="the reference Kubeflow tree is not next to the repo")
EVERYTHING = entries.selected(katib=True, spark=True, hub=True, knative=True, hub_registry=True)
TEAMS = (
    Team(name="vision", owner="lead@example.org", gpu_ceiling=8, s3_prefix="teams/vision", fsx_claim="fsx-lustre"),
    Team(name="nlp", owner="nlp@example.org", gpu_ceiling=2, s3_prefix="teams/nlp"),
)
SETTINGS = plan.Settings(
    admin=Admin("platform@example.org"),
    storage_class="gp3",
    gpu_node_pools=("gpu-inference",),
    teams=TEAMS,
    hub_registry_team="vision",
    fsx=FsxShare(1200),
)


@pytest.fixture(scope="session")
def staged(render_cache) -> list[staging.Staged]:
    rendered = render.render(REFERENCE, EVERYTHING, cache_dir=render_cache)
    return plan.build(rendered, SETTINGS)


@pytest.fixture(scope="session")
def default_set(render_cache) -> list[staging.Staged]:
    rendered = render.render(REFERENCE, entries.DEFAULT, cache_dir=render_cache)
    return plan.build(rendered, dataclasses.replace(SETTINGS, hub_registry_team=None))


def one(staged, kind, namespace, name) -> staging.Staged:
    (found,) = [s for s in staged if (s.key.kind, s.key.namespace, s.key.name) == (kind, namespace, name)]
    return found


def reaches(staged, item, target: ObjectKey) -> bool:
    by_key = {s.key: s for s in staged}
    todo, seen = list(item.depends_on), set()
    while todo:
        current = todo.pop()
        if current == target:
            return True
        if current not in seen:
            seen.add(current)
            todo.extend(by_key[current].depends_on)
    return False


def test_the_default_set_and_everything_stage_without_a_problem(staged, default_set):
    assert staging.check(staged) == []
    assert staging.check(default_set) == []
    # Upstream's 471 objects less cert-manager's 49 (the platform's) and the 2 NetworkPolicies of its namespace; two
    # teams' namespace, Profile and PodDefaults (pipelines token, notebook protection); one team's FSx volume, claim and
    # PodDefault; a PodDisruptionBudget for each of the 8 Deployments whose outage blocks pod creation or sign-in
    # (components.control_plane) and for the profiles (components.kubeflow.resilience.REPLICATED); less the grants
    # components.kubeflow.rbac leaves out; the 9 CRDs Dex would otherwise make itself (components.kubeflow.auth); the
    # TrainJob admission policy and its binding (components.kubeflow.trainer_admission); each team namespace's
    # NetworkPolicies (deny, own pods, DNS, HTTPS out and a Profile's five paths).
    policies = len(teams.network_policies(TEAMS[0], None))
    assert policies == 9
    assert len(default_set) == 471 - 49 - 2 + 4 * 2 + 3 + 8 + 1 - len(rbac.DROPPED_GRANTS) + 9 + 2 + 2 * policies


@pytest.mark.parametrize(
    ("kind", "namespace", "name", "stage"),
    [
        ("CustomResourceDefinition", "", "profiles.kubeflow.org", Stage.CRDS),
        ("Namespace", "", "kubeflow", Stage.CRDS),
        ("ClusterIssuer", "", "kubeflow-self-signing-issuer", Stage.ISSUER),
        ("Deployment", "istio-system", "istiod", Stage.ISTIO),
        ("MutatingWebhookConfiguration", "", "istio-sidecar-injector", Stage.ISTIO),
        ("Deployment", "auth", "dex", Stage.AUTH),
        ("Deployment", "oauth2-proxy", "oauth2-proxy", Stage.AUTH),
        ("Deployment", "kubeflow", "ml-pipeline", Stage.APPS),
        ("Certificate", "kubeflow", "poddefaults-webhook-cert", Stage.APPS),
        ("MutatingWebhookConfiguration", "", "poddefaults-webhook-mutating-webhook-configuration", Stage.APP_WEBHOOKS),
        ("ValidatingWebhookConfiguration", "", "validator.trainer.kubeflow.org", Stage.APP_WEBHOOKS),
        ("ClusterTrainingRuntime", "", "torch-distributed", Stage.APP_RESOURCES),
        ("Gateway", "kubeflow", "kubeflow-gateway", Stage.APP_RESOURCES),
        ("Namespace", "", "vision", Stage.TEAMS),
        ("Profile", "", "vision", Stage.TEAMS),
        ("PodDefault", "nlp", "access-ml-pipeline", Stage.TEAMS),
        ("Deployment", "vision", "model-registry-deployment", Stage.TEAMS),
    ],
)
def test_each_object_is_in_its_stage(staged, kind, namespace, name, stage):
    assert one(staged, kind, namespace, name).stage == stage


def test_every_object_waits_for_the_gates_of_the_stage_before_and_never_for_a_later_stage(staged):
    stages = {s.key: s.stage for s in staged}
    gates = {stage: [s.key for s in staged if s.stage == stage and staging.is_gate(s.manifest)] for stage in Stage}
    for item in staged:
        assert all(stages[d] <= item.stage for d in item.depends_on), item.key
        earlier = [s for s in Stage if s < item.stage and gates[s]]
        if earlier:
            assert set(gates[earlier[-1]]) <= set(item.depends_on), item.key


def test_gates_are_crds_workloads_webhook_configurations_certificates_and_issuers(staged):
    kinds = {s.key.kind for s in staged if staging.is_gate(s.manifest)}
    assert kinds == {
        "CustomResourceDefinition",
        "Deployment",
        "StatefulSet",
        "DaemonSet",
        "MutatingWebhookConfiguration",
        "ValidatingWebhookConfiguration",
        "Certificate",
        "Issuer",
        "ClusterIssuer",
    }


def test_gates_carry_the_await_annotations_pulumi_kubernetes_reads(staged):
    def wait_for(kind, namespace, name):
        return one(staged, kind, namespace, name).manifest["metadata"]["annotations"].get("pulumi.com/waitFor")

    assert wait_for("CustomResourceDefinition", "", "profiles.kubeflow.org") == "condition=Established"
    assert wait_for("MutatingWebhookConfiguration", "", "poddefaults-webhook-mutating-webhook-configuration") == (
        "jsonpath={.webhooks[*].clientConfig.caBundle}"
    )
    assert wait_for("Certificate", "kubeflow", "kfp-cache-cert") == "condition=Ready"
    assert wait_for("ClusterIssuer", "", "kubeflow-self-signing-issuer") == "condition=Ready"
    deployment = one(staged, "Deployment", "kubeflow", "ml-pipeline").manifest["metadata"]
    assert "pulumi.com/waitFor" not in (deployment.get("annotations") or {})  # the provider awaits rollouts itself
    assert not any("pulumi.com/skipAwait" in str(s.manifest["metadata"].get("annotations")) for s in staged)


def test_custom_resources_wait_for_their_crd_and_the_fail_closed_webhooks_that_check_them(staged):
    runtime = one(staged, "ClusterTrainingRuntime", "", "torch-distributed")
    assert (
        ObjectKey(
            "apiextensions.k8s.io", "CustomResourceDefinition", "", "clustertrainingruntimes.trainer.kubeflow.org"
        )
        in runtime.depends_on
    )
    assert (
        ObjectKey(
            "admissionregistration.k8s.io", "ValidatingWebhookConfiguration", "", "validator.trainer.kubeflow.org"
        )
        in runtime.depends_on
    )
    # cert-manager is the platform's: none of its objects is staged here, and its kinds need no CRD among them
    # (registration makes them depend on its release instead).
    assert not any(s.key.namespace == "cert-manager" or s.key.name.startswith("cert-manager") for s in staged)
    certificate = one(staged, "Certificate", "kubeflow", "kfp-cache-cert")
    assert reaches(
        staged, certificate, ObjectKey("cert-manager.io", "ClusterIssuer", "", "kubeflow-self-signing-issuer")
    )


def test_destroy_deletes_kubeflows_namespaces_together_after_everything_in_them(staged):
    issuer = one(staged, "ClusterIssuer", "", "kubeflow-self-signing-issuer")  # what every later object waits for
    namespaces = {s.key for s in staged if s.key.kind == "Namespace" and s.stage == Stage.CRDS}
    assert {"kubeflow", "kubeflow-system", "istio-system", "auth", "oauth2-proxy"} <= {k.name for k in namespaces}
    assert namespaces <= set(issuer.depends_on)
    # Seeded: an issuer that no longer holds a namespace is reported.
    broken = [
        dataclasses.replace(s, depends_on=tuple(d for d in s.depends_on if d.name != "auth"))
        if s.key == issuer.key
        else s
        for s in staged
    ]
    assert any("destroy would delete it alone" in p and "auth" in p for p in staging.check(broken))


def test_a_webhook_configuration_waits_for_its_service_and_the_workload_behind_it(staged):
    webhook = one(staged, "MutatingWebhookConfiguration", "", "poddefaults-webhook-mutating-webhook-configuration")
    assert ObjectKey("", "Service", "kubeflow", "poddefaults-webhook-service") in webhook.depends_on
    assert ObjectKey("apps", "Deployment", "kubeflow", "poddefaults-webhook-deployment") in webhook.depends_on
    jobset = one(staged, "ValidatingWebhookConfiguration", "", "jobset-validating-webhook-configuration")
    assert ObjectKey("apps", "Deployment", "kubeflow-system", "jobset-controller-manager") in jobset.depends_on


def test_a_workload_waits_for_the_certificates_it_mounts_and_a_certificate_for_its_issuer(staged):
    deployment = one(staged, "Deployment", "kubeflow", "poddefaults-webhook-deployment")
    assert ObjectKey("cert-manager.io", "Certificate", "kubeflow", "poddefaults-webhook-cert") in deployment.depends_on
    certificate = one(staged, "Certificate", "kubeflow", "poddefaults-webhook-cert")
    assert (
        ObjectKey("cert-manager.io", "Issuer", "kubeflow", "poddefaults-webhook-selfsigned-issuer")
        in certificate.depends_on
    )


def test_every_workload_waits_for_its_service_account_and_what_its_pods_mount(staged):
    # The API server refuses a pod whose ServiceAccount does not exist; with the workload created first, the engine
    # (at --parallel 8, a 2-core runner's default) filled every slot waiting for workloads whose accounts queued
    # behind them, until the awaits timed out (found by the engine tier).
    seaweedfs = one(staged, "Deployment", "kubeflow", "seaweedfs")
    assert ObjectKey("", "ServiceAccount", "kubeflow", "seaweedfs") in seaweedfs.depends_on
    argo = one(staged, "Deployment", "kubeflow", "workflow-controller")
    assert ObjectKey("", "ServiceAccount", "kubeflow", "argo") in argo.depends_on
    jupyter = one(staged, "Deployment", "kubeflow", "jupyter-web-app-deployment")
    assert ObjectKey("", "ConfigMap", "kubeflow", "jupyter-web-app-config") in jupyter.depends_on
    by_key = {s.key for s in staged}
    for item in staged:
        template = (item.manifest.get("spec") or {}).get("template") or {}
        account = (template.get("spec") or {}).get("serviceAccountName")
        wanted = ObjectKey("", "ServiceAccount", item.key.namespace, account or "")
        if account and wanted in by_key:
            assert reaches(staged, item, wanted), item.key


def test_the_checker_catches_a_workload_that_does_not_wait_for_its_service_account(staged):
    deployment = one(staged, "Deployment", "kubeflow", "seaweedfs")
    problems = checked_without(staged, deployment, "ServiceAccount")
    assert problems == [
        (
            "Deployment.apps kubeflow/seaweedfs: does not wait for ServiceAccount kubeflow/seaweedfs "
            "(the ServiceAccount its pods run as)"
        )
    ]


def test_a_team_profile_waits_for_its_namespace_and_team_objects_for_the_apps(staged):
    profile = one(staged, "Profile", "", "vision")
    assert ObjectKey("", "Namespace", "", "vision") in profile.depends_on
    assert reaches(staged, profile, ObjectKey("apps", "Deployment", "kubeflow", "profiles-deployment"))
    pod_default = one(staged, "PodDefault", "vision", "access-ml-pipeline")
    assert ObjectKey("", "Namespace", "", "vision") in pod_default.depends_on
    assert reaches(
        staged,
        pod_default,
        ObjectKey(
            "admissionregistration.k8s.io",
            "MutatingWebhookConfiguration",
            "",
            "poddefaults-webhook-mutating-webhook-configuration",
        ),
    )


def test_logical_names_are_short_dns_safe_unique_and_follow_the_pattern(staged):
    names = [s.name for s in staged]
    assert len(set(names)) == len(names)
    assert all(re.fullmatch(r"[a-z0-9]([a-z0-9-]*[a-z0-9])?", n) and len(n) <= staging.MAX_NAME for n in names)
    assert one(staged, "Deployment", "kubeflow", "ml-pipeline").name == "kubeflow-deployment-kubeflow-ml-pipeline"
    assert (
        one(staged, "ClusterTrainingRuntime", "", "torch-distributed").name
        == "kubeflow-clustertrainingruntime-torch-distributed"
    )


def test_an_object_keeps_its_logical_name_when_a_release_moves_it_to_another_stage(staged):
    """The name is the object's identity alone: a stage change (an upstream object becoming a webhook's target, a
    kind moving between families) would otherwise be a new URN, and `pulumi up` would delete and create it (a
    claim's volume with it)."""
    claim = one(staged, "PersistentVolumeClaim", "kubeflow", "mysql-pv-claim")
    moved = staging.stage([staging.Item(claim.manifest, None)], team_namespaces=())  # a team-stage object now
    assert moved[0].stage is not claim.stage
    assert moved[0].name == claim.name


def test_each_object_carries_the_stage_numbered_name_of_0_2_as_its_former_name(staged):
    mysql = one(staged, "Deployment", "kubeflow", "mysql")
    assert mysql.former_names == ("kubeflow-4-deployment-kubeflow-mysql",)
    runtime = one(staged, "ClusterTrainingRuntime", "", "torch-distributed")
    assert runtime.former_names == ("kubeflow-6-clustertrainingruntime-torch-distributed",)
    assert all(s.name not in s.former_names for s in staged)


def test_a_long_name_is_cut_with_a_hash_of_the_whole_identity():
    first = ObjectKey("apiextensions.k8s.io", "CustomResourceDefinition", "", "x" * 70 + ".example.com")
    second = ObjectKey("apiextensions.k8s.io", "CustomResourceDefinition", "", "x" * 70 + ".example.org")
    a, b = staging.logical_name(first), staging.logical_name(second)
    assert len(a) == len(b) == staging.MAX_NAME
    assert a != b
    assert staging.logical_name(first) == a  # stable
    assert len(staging.stage_numbered_name(Stage.CRDS, first)) == staging.MAX_NAME


# ------------------------------------------------------------------------------------------------ seeded violations


def replaced(staged, item, **changes):
    return [dataclasses.replace(s, **changes) if s.key == item.key else s for s in staged]


def checked_without(staged, item, kind: str) -> list[str]:
    """The checker's problems once `item` no longer waits for anything of `kind`."""
    return staging.check(replaced(staged, item, depends_on=tuple(d for d in item.depends_on if d.kind != kind)))


def test_the_checker_catches_a_custom_resource_moved_before_its_webhook(staged):
    runtime = one(staged, "ClusterTrainingRuntime", "", "torch-distributed")
    problems = staging.check(replaced(staged, runtime, stage=Stage.APPS))
    assert any(
        f"of the later stage {int(Stage.APP_WEBHOOKS)}" in p and "validator.trainer.kubeflow.org" in p for p in problems
    )


def test_the_checker_catches_a_custom_resource_that_waits_for_nothing(staged):
    runtime = one(staged, "ClusterTrainingRuntime", "", "torch-distributed")
    problems = "\n".join(staging.check(replaced(staged, runtime, depends_on=())))
    assert "(its CRD)" in problems
    assert "(a fail-closed webhook intercepting its creation)" in problems
    assert "a gate of the stage before" in problems


def test_the_checker_catches_a_workload_that_does_not_wait_for_its_certificate(staged):
    deployment = one(staged, "Deployment", "kubeflow", "poddefaults-webhook-deployment")
    problems = checked_without(staged, deployment, "Certificate")
    assert problems == [
        (
            "Deployment.apps kubeflow/poddefaults-webhook-deployment: does not wait for "
            "Certificate.cert-manager.io kubeflow/poddefaults-webhook-cert (the Certificate whose Secret it mounts)"
        )
    ]


def test_the_checker_catches_a_webhook_configuration_that_does_not_wait_for_its_service(staged):
    webhook = one(staged, "MutatingWebhookConfiguration", "", "poddefaults-webhook-mutating-webhook-configuration")
    problems = checked_without(staged, webhook, "Service")
    assert len(problems) == 1
    assert "the service behind its webhooks" in problems[0]


def test_the_checker_catches_a_profile_created_before_its_namespace(staged):
    profile = one(staged, "Profile", "", "vision")
    assert checked_without(staged, profile, "Namespace") == [
        "Profile.kubeflow.org vision: does not wait for Namespace vision (the team namespace it adopts)"
    ]


def test_the_checker_catches_a_gate_without_its_await_annotation(staged):
    crd = one(staged, "CustomResourceDefinition", "", "profiles.kubeflow.org")
    manifest = {**crd.manifest, "metadata": {**crd.manifest["metadata"], "annotations": {}}}
    problems = staging.check(replaced(staged, crd, manifest=manifest))
    assert problems == [f"{crd.key}: a gate without pulumi.com/waitFor: condition=Established"]


def test_the_checker_catches_a_cycle(staged):
    namespace = one(staged, "Namespace", "", "kubeflow")
    deployment = one(staged, "Deployment", "kubeflow", "ml-pipeline")
    problems = staging.check(replaced(staged, namespace, depends_on=(deployment.key,)))
    assert any("later stage" in p for p in problems)  # a cycle across stages is first an order error
    same_stage = one(staged, "Service", "kubeflow", "ml-pipeline")
    cyclic = replaced(
        replaced(staged, deployment, depends_on=(*deployment.depends_on, same_stage.key)),
        same_stage,
        depends_on=(*same_stage.depends_on, deployment.key),
    )
    assert staging.check(cyclic) == ["the dependencies have a cycle"]


def test_the_checker_catches_a_dependency_that_is_not_staged(staged):
    deployment = one(staged, "Deployment", "kubeflow", "ml-pipeline")
    ghost = ObjectKey("", "ConfigMap", "kubeflow", "ghost")
    problems = staging.check(replaced(staged, deployment, depends_on=(*deployment.depends_on, ghost)))
    assert problems == [f"{deployment.key}: depends on {ghost}, which is not staged"]


def test_an_object_rendered_twice_is_refused():
    obj = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "kubeflow"}}
    with pytest.raises(ValueError, match="rendered twice"):
        staging.stage([staging.Item(obj, entries.Part.APPS), staging.Item(obj, entries.Part.APPS)])


def test_a_custom_resource_without_its_crd_is_refused():
    obj = {"apiVersion": "example.org/v1", "kind": "Widget", "metadata": {"name": "a"}, "spec": {}}
    with pytest.raises(ValueError, match="no CustomResourceDefinition for Widget"):
        staging.stage([staging.Item(obj, entries.Part.APPS)])
