"""Kubeflow in the shipped stacks: every object a resource under the part, no upstream default credential, the
notebook form and team roles built from the stack's own facts, and bad input refused before anything is created."""

from __future__ import annotations

import base64
import contextlib
import dataclasses
import json
from typing import Any

import pulumi
import pytest
import yaml

from components.config import ConfigError
from components.kubeflow import staging
from components.kubeflow.objects import key
from components.kubeflow.staging import Stage
from components.platform.parse import parse_config
from components.platform.part_args import kubeflow_objects as kubeflow_objects_of

from .conftest import PROJECT, run_stack, stack_config

#: Upstream's default credentials (Dex's static password `12341234` and its bcrypt hash, SeaweedFS's keys, the
#: OIDC client secret Dex and oauth2-proxy share, oauth2-proxy's cookie secret, the example user): none may reach the
#: cluster. Written out here, not read from the code that replaces them.
DEFAULTS = (
    "12341234",
    "minio123",
    "$2y$12$4K/VkmDd1q1Orb3xAt82zu8gk7Ad6ReFR4LCP9UeYE90NLiN9Df72",
    "pUBnBOY80SnXgjibTYM9ZWNzY2xreNGQok",
    "7d16fee92f8d11b8940b081b3f8b8acb",
    "user@example.com",
    "MYSQL_ALLOW_EMPTY_PASSWORD",
)
#: Database passwords upstream leaves empty or sets to a word (Katib's MySQL, the model registry's).
WEAK_PASSWORDS = ("", "test", "postgres")


def texts(value):
    if isinstance(value, str):
        yield value
        with contextlib.suppress(ValueError):  # not base64, or not text once decoded
            yield base64.b64decode(value, validate=True).decode()
    elif isinstance(value, dict):
        for item in value.values():
            yield from texts(item)
    elif isinstance(value, list):
        for item in value:
            yield from texts(item)


@pytest.fixture(params=["dev", "prod"])
def stack(request):
    return request.getfixturevalue(request.param)


def kubeflow_objects(inventory):
    kubeflow = inventory.one("eksml:kubeflow:Kubeflow")
    stages = {r.urn for r in inventory.children(kubeflow) if r.type == "eksml:kubeflow:Stage"}
    return [r for r in inventory.resources if r.parent in stages]


def recorded_plan(inventory) -> list[staging.Staged]:
    """The Kubeflow objects as the engine would receive them, read back into staged objects: stage from the stage
    component each is under, dependencies from the recorded edges between them."""
    kubeflow = inventory.one("eksml:kubeflow:Kubeflow")
    stage_of = {
        r.urn: Stage[r.name.removeprefix("kubeflow-").replace("-", "_").upper()]
        for r in inventory.children(kubeflow)
        if r.type == "eksml:kubeflow:Stage"
    }
    objects = [r for r in inventory.resources if r.parent in stage_of]
    keys = {r.urn: key(r.inputs) for r in objects}
    return [
        staging.Staged(
            keys[r.urn], stage_of[r.parent], r.name, r.inputs, tuple(keys[d] for d in r.dependencies if d in keys)
        )
        for r in objects
    ]


@pytest.mark.stack
@pytest.mark.parametrize("name", ["dev", "prod"])
def test_every_planned_kubeflow_object_is_registered_and_the_recorded_order_passes_the_checks(name, request):
    inventory = request.getfixturevalue(name)
    recorded = recorded_plan(inventory)
    planned = kubeflow_objects_of(parse_config(stack_config(name), project=PROJECT, stack=name))
    assert sorted((s.name, s.stage) for s in recorded) == sorted((s.name, s.stage) for s in planned)
    assert len(recorded) > 420  # the default set and the example team
    assert staging.check(recorded) == []
    # A seeded violation in the recorded graph is caught: a Profile that no longer waits for its namespace.
    profile = next(s for s in recorded if s.key.kind == "Profile")
    cut = dataclasses.replace(profile, depends_on=tuple(d for d in profile.depends_on if d.kind != "Namespace"))
    assert any("Profile" in p for p in staging.check([cut if s is profile else s for s in recorded]))


@pytest.mark.stack
def test_kubeflow_uses_the_platforms_cert_manager_and_installs_none_of_its_own(stack):
    release = stack.one("kubernetes:helm.sh/v3:Release", "cert-manager")
    assert release.inputs["chart"] == "cert-manager"
    assert release.inputs["version"] == "v1.20.2"
    assert release.inputs["values"]["crds"] == {"enabled": True, "keep": False}
    for values in (release.inputs["values"], *(release.inputs["values"][k] for k in ("webhook", "cainjector"))):
        assert values["nodeSelector"] == {"eksml.io/node-role": "system"}
    objects = kubeflow_objects(stack)
    assert not [o.name for o in objects if o.inputs.get("kind") == "Deployment" and "cert-manager" in o.name]
    cert_manager_objects = [o for o in objects if str(o.inputs.get("apiVersion", "")).startswith("cert-manager.io/")]
    assert {o.inputs["kind"] for o in cert_manager_objects} == {"Certificate", "Issuer", "ClusterIssuer"}
    # Created after the release (its CRDs and webhook), deleted before it.
    assert all(release.urn in o.dependencies for o in cert_manager_objects)


def leaked_credentials(inventory) -> list[tuple[str, str]]:
    leaked = [
        (r.name, default)
        for r in inventory.resources
        for text in texts(r.inputs)
        for default in DEFAULTS
        if default in text
    ]
    for secret in (r for r in kubeflow_objects(inventory) if r.inputs.get("kind") == "Secret"):
        values = {
            **(secret.inputs.get("stringData") or {}),
            **{
                k: base64.b64decode(v).decode() for k, v in (secret.inputs.get("data") or {}).items() if v != "[secret]"
            },
        }
        leaked += [(secret.name, k) for k, v in values.items() if "PASSWORD" in k.upper() and v in WEAK_PASSWORDS]
    return leaked


@pytest.mark.stack
def test_no_upstream_default_credential_appears_in_any_resource_input(stack):
    assert leaked_credentials(stack) == []
    assert stack.stack_outputs["kubeflowAdminPassword"] == "[secret]"


@pytest.mark.stack
def test_with_every_optional_component_no_upstream_default_credential_appears_either():
    section = kubeflow_section()
    section.update(
        components={"katib": True, "spark": True, "hub": True, "knative": True}, hubRegistryTeam="ml-research"
    )
    inventory = run_stack("dev", {"kubeflow": section})
    names = {o.inputs["metadata"]["name"] for o in kubeflow_objects(inventory)}
    assert {
        "katib-mysql-secrets",
        "model-registry-db-secrets",
        "model-catalog-postgres",
        "spark-operator-controller",
    } <= names
    assert leaked_credentials(inventory) == []


@pytest.mark.stack
@pytest.mark.parametrize("name", ["dev", "prod"])
def test_the_notebook_form_offers_only_the_stacks_gpu_pools_and_exactly_their_taint(name, request):
    inventory = request.getfixturevalue(name)
    config_map = next(
        o
        for o in kubeflow_objects(inventory)
        if o.inputs.get("kind") == "ConfigMap" and "spawner_ui_config.yaml" in (o.inputs.get("data") or {})
    )
    form = yaml.safe_load(config_map.inputs["data"]["spawner_ui_config.yaml"])["spawnerFormDefaults"]
    pools = inventory.of_type("kubernetes:karpenter.sh/v1:NodePool")
    gpu_pools = {p.inputs["metadata"]["name"]: p for p in pools if p.inputs["spec"]["limits"].get("nvidia.com/gpu")}
    assert gpu_pools
    assert len(gpu_pools) < len(pools)
    offered = [
        o["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
        for o in form["affinityConfig"]["options"]
    ]
    assert offered == [
        [{"matchExpressions": [{"key": "karpenter.sh/nodepool", "operator": "In", "values": [pool]}]}]
        for pool in sorted(gpu_pools)
    ]
    (group,) = form["tolerationGroup"]["options"]
    taints = {
        json.dumps(t, sort_keys=True)
        for p in gpu_pools.values()
        for t in p.inputs["spec"]["template"]["spec"]["taints"]
    }
    # Each toleration is one of the pools' taints (key, value, effect) matched exactly, and every taint is tolerated.
    assert all(t["operator"] == "Equal" for t in group["tolerations"])
    assert {
        json.dumps({k: v for k, v in t.items() if k != "operator"}, sort_keys=True) for t in group["tolerations"]
    } == taints
    assert form["gpus"]["value"]["num"] == "none"
    assert form["tolerationGroup"]["value"] == ""


def test_a_team_gets_a_profile_with_its_gpu_quota_and_a_role_only_its_editor_account_may_assume(dev):
    objects = kubeflow_objects(dev)
    profile = next(o for o in objects if o.inputs.get("kind") == "Profile")
    assert profile.inputs["metadata"]["name"] == "ml-research"
    # gpuQuota 2, and as many again the team may borrow through Kueue: the ceiling of its share
    assert profile.inputs["spec"]["resourceQuotaSpec"]["hard"]["requests.nvidia.com/gpu"] == "4"
    namespace = next(
        o for o in objects if o.inputs.get("kind") == "Namespace" and o.inputs["metadata"]["name"] == "ml-research"
    )
    assert dev.depends_on(profile, namespace)
    trust = json.loads(dev.one("aws:iam/role:Role", "kubeflow-team-ml-research-role").inputs["assumeRolePolicy"])
    condition = trust["Statement"][0]["Condition"]["StringEquals"]
    assert sorted(condition.values()) == ["sts.amazonaws.com", "system:serviceaccount:ml-research:default-editor"]
    s3 = json.loads(dev.one("aws:iam/rolePolicy:RolePolicy", "kubeflow-team-ml-research-s3").inputs["policy"])
    assert all("teams/ml-research" in json.dumps(s) for s in s3["Statement"])


def test_notebook_pods_are_exempt_only_from_the_scheduler_rule_of_the_gpu_admission_policy(dev):
    policy = dev.one("kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicy", "gpu-admission-policy")
    expressions = [v["expression"] for v in policy.inputs["spec"]["validations"]]
    scheduler_rules = [e for e in expressions if "schedulerName" in e]
    assert len(scheduler_rules) == 1
    assert "notebook-name" in scheduler_rules[0]
    assert any("tolerations" in e and "notebook-name" not in e for e in expressions)


def kubeflow_section(stack: str = "dev") -> dict[str, Any]:
    return json.loads(stack_config(stack)[f"{PROJECT}:kubeflow"])


def refused(overrides: dict[str, Any], stack: str = "dev") -> list[str]:
    with pytest.raises(ConfigError) as error:
        parse_config(stack_config(stack, overrides), project=PROJECT, stack=stack)
    return [str(issue) for issue in error.value.issues]


@pytest.mark.stack
def test_kubeflow_on_kubernetes_1_34_is_refused_with_the_reason():
    cluster = json.loads(stack_config("dev")[f"{PROJECT}:cluster"])
    assert refused({"cluster": {**cluster, "kubernetesVersion": "1.34"}}) == [
        "kubeflow.enabled: Kubeflow 26.03.1 needs Kubernetes 1.35; cluster.kubernetesVersion is 1.34"
    ]


@pytest.mark.stack
def test_a_team_quota_above_every_gpu_pools_limit_together_is_refused():
    section = kubeflow_section()
    section["teams"]["ml-research"]["gpuQuota"] = 5
    assert refused({"kubeflow": section, "kueue": {"teamStackGpus": 0}}) == [
        (
            "kubeflow.teams: the guaranteed GPUs (kubeflow.teams.ml-research.gpuQuota 5 + kueue.teamStackGpus 0 = 5) "
            "pass what the shared GPU pools may launch (4: gpu-inference: 4); lower a quota or raise a pool's GPU limit"
        )
    ]
    assert refused({"kubeflow": section, "kueue": {"enabled": False}}) == [
        "kubeflow.teams.ml-research.gpuQuota: 5 GPUs is more than every GPU NodePool together may run (4)"
    ]


@pytest.mark.stack
def test_teams_whose_s3_prefixes_overlap_are_refused_naming_the_inner_one():
    section = kubeflow_section()
    prefix = section["teams"]["ml-research"]["s3Prefix"]
    section["teams"]["ml-research"]["gpuQuota"] = 1  # with the team stacks' reserve of 2, the guarantees fit dev's 4
    section["teams"]["vision"] = {"owner": "v@example.org", "gpuQuota": 1, "s3Prefix": f"{prefix}/vision"}
    (problem,) = refused({"kubeflow": section})
    assert problem.startswith(
        f"kubeflow.teams.vision.s3Prefix: '{prefix}/vision' lies within team ml-research's prefix"
    )
    section["teams"]["vision"]["s3Prefix"] = prefix
    (problem,) = refused({"kubeflow": section})
    assert problem.startswith(f"kubeflow.teams.vision.s3Prefix: '{prefix}' is team ml-research's prefix")
    section["teams"]["vision"]["s3Prefix"] = f"{prefix}-vision"  # a sibling, not inside
    parse_config(stack_config("dev", {"kubeflow": section}), project=PROJECT, stack="dev")


# With a host, the connector of the stack files has its callback (https://<host>/dex/callback).
ALB = {
    "mode": "alb",
    "certificateArn": "arn:aws:acm:us-west-2:123456789012:certificate/0f1e2d3c-aaaa",
    "host": "kf.corp.io",
}
#: An internet-facing ALB admits only the ranges it lists (without them the controller would admit 0.0.0.0/0).
FACING = {**ALB, "scheme": "internet-facing", "allowedCidrs": ["198.18.0.0/15"]}


def load_balancer_allowance(inventory):
    (policy,) = [
        o
        for o in kubeflow_objects(inventory)
        if o.inputs.get("kind") == "NetworkPolicy" and o.inputs["metadata"]["name"] == "allow-load-balancer"
    ]
    return policy.inputs["spec"]["ingress"][0]["from"]


@pytest.mark.stack
def test_behind_an_alb_the_gateway_admits_the_albs_subnets_and_the_ingress_goes_before_its_controller():
    inventory = run_stack("dev", {"kubeflow": {**kubeflow_section(), "access": ALB}})
    subnets = {s.inputs["cidrBlock"]: s.name for s in inventory.of_type("aws:ec2/subnet:Subnet")}
    internal = [peer["ipBlock"]["cidr"] for peer in load_balancer_allowance(inventory)]
    assert internal
    assert all("private" in subnets[cidr] for cidr in internal)
    facing = run_stack("dev", {"kubeflow": {**kubeflow_section(), "access": FACING}})
    public = [peer["ipBlock"]["cidr"] for peer in load_balancer_allowance(facing)]
    assert len(public) == len(internal)
    assert all("public" in subnets[cidr] for cidr in public)
    (ingress,) = [o for o in kubeflow_objects(inventory) if o.inputs.get("kind") == "Ingress"]
    controller = inventory.release("aws-load-balancer-controller")
    assert inventory.depends_on(ingress, controller)  # the controller deletes the ALB it made


@pytest.mark.stack
def test_behind_an_alb_in_an_existing_vpc_the_gateway_admits_that_vpcs_cidrs():
    from components.tools.preview import platform_model

    existing = {
        "availabilityZones": ["us-west-2a", "us-west-2b"],
        "existing": {"vpcId": "vpc-0123456789abcdef0", "privateSubnetIds": ["subnet-01234567", "subnet-89abcdef"]},
    }
    inventory = run_stack("dev", {"kubeflow": {**kubeflow_section(), "access": ALB}, "network": existing})
    assert load_balancer_allowance(inventory) == [{"ipBlock": {"cidr": "[unknown]"}}]  # every CIDR, read from AWS
    # the model reads that as the VPC's ranges, which only AWS knows: it judges in a stand-in and says so
    platform, found = platform_model(inventory, None)
    assert [str(p) for p in found] == []
    assert not platform.vpc.known


@pytest.mark.stack
@pytest.mark.parametrize("scheme", ["internal", "internet-facing"])
def test_the_model_judges_the_alb_allowance_in_the_stacks_own_vpc_and_catches_one_built_for_another(scheme):
    """dev's VPC is 10.20.0.0/16, not the network config's default: the allowance the plan made from dev's subnets
    passes the model, the same allowance made from the default VPC's subnets is caught."""
    from ipaddress import IPv4Network

    from components.network.plan import plan_subnets
    from components.tools.cluster_model import check_views
    from components.tools.preview import stack_view

    access = FACING if scheme == "internet-facing" else ALB
    inventory = run_stack("dev", {"kubeflow": {**kubeflow_section(), "access": access}})
    view = stack_view(inventory)
    platform, found = check_views([view], None)
    assert platform.vpc.cidrs == (IPv4Network("10.20.0.0/16"),)
    assert [str(p) for p in found] == []

    default_vpc = plan_subnets(IPv4Network("10.0.0.0/16"), ["us-west-2a", "us-west-2b"])
    wrong = [{"ipBlock": {"cidr": str(p.public if scheme == "internet-facing" else p.private)}} for p in default_vpc]
    for _, obj in view.manifests:
        if obj["kind"] == "NetworkPolicy" and obj["metadata"]["name"] == "allow-load-balancer":
            obj["spec"]["ingress"][0]["from"] = wrong
    _, found = check_views([view], None)
    assert (
        sorted(p.message.split(" (")[0] for p in found)
        == [
            "a load balancer in the public subnets cannot reach Deployment istio-system/istio-ingressgateway"
            if scheme == "internet-facing"
            else "a load balancer in the VPC cannot reach Deployment istio-system/istio-ingressgateway"
        ]
        * 2
    )


@pytest.mark.stack
def test_an_alb_without_the_load_balancer_controller_is_refused():
    section = kubeflow_section()
    section["access"] = ALB
    problems = refused({"kubeflow": section, "ingress": {"loadBalancerController": False}})
    assert problems == [
        (
            "kubeflow.access.mode: alb needs the AWS Load Balancer Controller to make the ALB; set "
            "ingress.loadBalancerController: true or use port-forward"
        )
    ]


@pytest.mark.stack
def test_an_unknown_component_name_is_refused_by_its_key():
    section = kubeflow_section()
    section["components"] = {"seldon": True}
    (problem,) = refused({"kubeflow": section})
    assert problem.startswith("kubeflow.components.seldon: unknown key")


@pytest.mark.stack
def test_a_team_that_is_also_an_fsx_namespace_or_claims_fsx_on_a_stack_without_it_is_refused():
    section = kubeflow_section("prod")
    section["teams"]["team-a"] = {"owner": "a@example.org", "gpuQuota": 1, "s3Prefix": "teams/a"}
    problems = refused({"kubeflow": section}, "prod")
    assert any(p.startswith("kubeflow.teams.team-a: is also in storage.fsx.namespaces") for p in problems)
    section = kubeflow_section()
    section["teams"]["ml-research"]["fsxClaim"] = "datasets"
    storage = json.loads(stack_config("dev")["eks-ml-platform:storage"])
    storage.pop("fsx")
    assert refused({"kubeflow": section, "storage": storage}) == [
        (
            "kubeflow.teams.ml-research.fsxClaim: needs the platform's FSx file system (storage.fsx), which this stack "
            "does not create"
        )
    ]


@pytest.mark.stack
def test_a_teams_fsx_claim_binds_a_static_volume_of_the_platforms_file_system_and_goes_with_its_namespace():
    section = kubeflow_section()
    section["teams"]["ml-research"]["fsxClaim"] = "datasets"
    inventory = run_stack("dev", {"kubeflow": section})
    objects = {(o.inputs.get("kind"), o.inputs["metadata"]["name"]): o for o in kubeflow_objects(inventory)}
    volume, claim = (
        objects[("PersistentVolume", "datasets-ml-research")],
        objects[("PersistentVolumeClaim", "datasets")],
    )
    namespace = objects[("Namespace", "ml-research")]
    file_system = inventory.one("aws:fsx/lustreFileSystem:LustreFileSystem")
    csi = volume.inputs["spec"]["csi"]
    assert csi["volumeHandle"] == file_system.id == inventory.stack_outputs["fsxFileSystemId"]
    assert csi["volumeAttributes"]["mountname"] == file_system.outputs["mountName"]
    assert volume.inputs["spec"]["persistentVolumeReclaimPolicy"] == "Retain"
    assert claim.inputs["metadata"]["namespace"] == "ml-research"
    assert claim.inputs["spec"]["volumeName"] == "datasets-ml-research"
    # Destroy: the namespace goes (taking the claim, so no pod holds it), then the volume, then the driver.
    assert claim.deleted_with == namespace.urn
    assert inventory.depends_on(namespace, volume)
    assert inventory.depends_on(volume, inventory.one("kubernetes:helm.sh/v3:Release", "storage-fsx-csi"))
    mount = objects[("PodDefault", "mount-fsx")]
    assert mount.inputs["spec"]["volumes"] == [{"name": "fsx", "persistentVolumeClaim": {"claimName": "datasets"}}]


@pytest.mark.stack
def test_with_cluster_tokens_the_gateway_accepts_this_clusters_service_account_tokens(dev):
    section = kubeflow_section()
    section["access"] = {"clusterTokens": True}
    inventory = run_stack("dev", {"kubeflow": section})
    objects = kubeflow_objects(inventory)
    (authentication,) = [
        o
        for o in objects
        if o.inputs.get("kind") == "RequestAuthentication" and o.inputs["metadata"]["name"] == "m2m-token-issuer"
    ]
    (rule,) = authentication.inputs["spec"]["jwtRules"]
    assert rule["issuer"] == "https://" + inventory.stack_outputs["oidcIssuer"]
    assert rule["outputClaimToHeaders"][0] == {"claim": "sub", "header": "kubeflow-userid"}
    assert rule["audiences"] == ["pipelines.kubeflow.org"]  # not any token of the cluster (IRSA's included)
    (in_cluster,) = [
        o
        for o in objects
        if o.inputs.get("kind") == "NetworkPolicy" and o.inputs["metadata"]["name"] == "allow-in-cluster-clients"
    ]
    (peer,) = in_cluster.inputs["spec"]["ingress"][0]["from"]
    assert peer["namespaceSelector"]["matchExpressions"][0]["values"] == ["ml-research"]  # the team's pipelines
    (parameters,) = [
        o
        for o in objects
        if o.inputs.get("kind") == "ConfigMap" and o.inputs["metadata"]["name"] == "oauth2-proxy-parameters"
    ]
    assert parameters.inputs["data"]["FORCE_HTTPS"] == "false"  # reached by port-forward, over plain HTTP
    # Off by default: no such check at the gateway.
    assert not [
        o
        for o in kubeflow_objects(dev)  # the dev stack as its file sets it
        if o.inputs.get("kind") == "RequestAuthentication" and o.inputs["metadata"]["name"] == "m2m-token-issuer"
    ]


@pytest.mark.stack
def test_the_connectors_secret_and_static_users_passwords_reach_dex_only_as_secrets():
    from components.platform.entry import program
    from components.tools.preview import mocks

    section = kubeflow_section()
    section["auth"] = {**section["auth"], "staticUsers": {"tester": "tester@example.org"}}
    secret_key = f"{PROJECT}:kubeflowOidcClientSecret"
    config = {**stack_config("dev", {"kubeflow": section}), secret_key: "from-the-idp"}
    inventory = mocks.run(
        program, project=PROJECT, stack="dev", region="us-west-2", config=config, secret_keys=[secret_key]
    )
    assert inventory.stack_outputs["kubeflowUserPasswords"] == "[secret]"
    (passwords,) = [
        o
        for o in kubeflow_objects(inventory)
        if o.inputs.get("kind") == "Secret" and o.inputs["metadata"]["name"] == "dex-passwords"
    ]
    assert passwords.inputs["stringData"] == {
        "DEX_USER_PASSWORD": "[secret]",
        "DEX_STATIC_USER_TESTER_PASSWORD": "[secret]",
        "DEX_CONNECTOR_CORP_CLIENT_SECRET": "[secret]",
    }
    assert "from-the-idp" not in json.dumps([r.inputs for r in inventory.resources])
    # Set in plain text, it stops `pulumi up` before anything is created, naming the key.
    with pytest.raises(pulumi.RunError, match=r"kubeflow\.auth\.connectors\.corp\.clientSecretKey: .*plain text"):
        mocks.run(program, project=PROJECT, stack="dev", region="us-west-2", config=config)


@pytest.mark.stack
def test_a_missing_tree_stops_the_program_before_anything_is_created(tmp_path):
    section = {**kubeflow_section(), "tree": str(tmp_path / "nowhere")}
    with pytest.raises(pulumi.RunError, match=r"kubeflow: .*run `python -m components\.kubeflow fetch` first"):
        run_stack("dev", {"kubeflow": section})
    from components.tools.preview.mocks import RecordingMonitor

    monitor = pulumi.runtime.settings.get_monitor()
    assert isinstance(monitor, RecordingMonitor)
    assert monitor.recorded == {}  # not a VPC, not a role


def test_pipelines_servers_get_time_for_mysql_to_start_and_other_workloads_keep_the_default(dev):
    workloads = {
        o.inputs["metadata"]["name"]: (o.inputs["metadata"].get("annotations") or {}).get("pulumi.com/timeoutSeconds")
        for o in kubeflow_objects(dev)
        if o.inputs.get("kind") == "Deployment" and o.inputs["metadata"].get("namespace") == "kubeflow"
    }
    for server in ("mysql", "ml-pipeline", "metadata-grpc-deployment", "cache-server", "ml-pipeline-persistenceagent"):
        assert workloads[server] == "1200", server  # 20 minutes, against Pulumi's default of 10
    assert workloads["jupyter-web-app-deployment"] is None
    assert workloads["profiles-deployment"] is None


@pytest.mark.stack
def test_users_cannot_register_namespaces_every_profile_is_the_stacks(stack):
    (config,) = [
        o
        for o in kubeflow_objects(stack)
        if o.inputs.get("kind") == "ConfigMap" and o.inputs["metadata"]["name"] == "dashboard-parameters"
    ]
    assert config.inputs["data"]["REGISTRATION_FLOW"] == "false"
    # and no upstream example Profile or user namespace is installed
    assert not [o.name for o in kubeflow_objects(stack) if "kubeflow-user-example-com" in json.dumps(o.inputs)]


def test_a_team_may_use_the_bucket_key_through_s3_only_where_its_bucket_is_kms_encrypted(dev, prod):
    """prod's team bucket (`datasets`) uses the stack's KMS key: without the key the team can neither read nor write
    its prefix; dev's uses S3-managed keys, so its teams get no KMS permission at all."""

    def kms_statements(inventory, team):
        policy = json.loads(inventory.one("aws:iam/rolePolicy:RolePolicy", f"kubeflow-team-{team}-s3").inputs["policy"])
        return [s for s in policy["Statement"] if any(str(a).startswith("kms:") for a in s["Action"])]

    (statement,) = kms_statements(prod, "research")
    assert statement["Resource"] == prod.one("aws:kms/key:Key", "storage-buckets").outputs["arn"]
    assert statement["Condition"]["StringEquals"] == {"kms:ViaService": "s3.us-west-2.amazonaws.com"}
    assert kms_statements(dev, "ml-research") == []


@pytest.mark.stack
def test_only_seaweedfs_mode_generates_seaweedfs_s3_keys(dev, prod):
    def generated(inventory):
        return {r.name for r in inventory.of_type("random:index/randomPassword:RandomPassword")}

    keys = {"kubeflow-pipelines-s3-access-key", "kubeflow-pipelines-s3-secret-key"}
    assert keys <= generated(dev)  # SeaweedFS (dev's default) serves its S3 API with them
    assert not keys & generated(prod)  # prod keeps its artifacts on S3, through IRSA
    assert "kubeflow-pipelines-mysql-password" in generated(prod)
