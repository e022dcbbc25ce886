"""Team components (pure): a team checked against what its platform offers, its namespace's bounds and network
allowances, its S3 permissions, its NodePool capped by the platform's, its Kubeflow Profile."""

from __future__ import annotations

import copy
import json
from typing import Any

import jsonschema
import pytest
import yaml

from components.config.errors import ConfigError
from components.identity.team_policy import team_s3_policy
from components.kubeflow.teams import PROFILE_NAMESPACE_LABELS
from components.team.config import TeamConfig, parse_team_config
from components.team.offer import PlatformContractError, parse_offer
from components.team.plan import plan_team
from components.team.profile import team_profile

from .conftest import REPO

PLATFORM = json.loads((REPO / "examples" / "team-stack" / "platform-outputs.prod.json").read_text())


def offer(**changes):
    outputs = {**PLATFORM, **changes}
    return parse_offer({k: v for k, v in outputs.items() if v is not None}, stack="acme/eks-ml-platform/prod")


def team(**changes) -> TeamConfig:
    document = {"name": "vision", "quota": {"gpus": 8}, **changes}
    return TeamConfig.model_validate(document)


def unreserved(name: str) -> TeamConfig:
    """A team named `name` that asks the platform's shared pools for no guarantee, so that only its name is judged
    (prod's reserve for team stacks is kept for `vision` alone)."""
    return team(name=name, quota={"gpus": 0})


def problems(team_config: TeamConfig, platform=None) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        plan_team(team_config, platform or offer())
    return [str(issue) for issue in caught.value.issues]


# ----------------------------------------------------------------------------------------------- namespace


def test_the_namespace_enforces_baseline_pod_security_and_is_labelled_for_the_team():
    labels = plan_team(team(), offer()).namespace["namespace"]["metadata"]["labels"]
    assert labels["pod-security.kubernetes.io/enforce"] == "baseline"
    assert labels["pod-security.kubernetes.io/warn"] == "restricted"
    assert labels["eksml.io/team"] == "vision"


def test_extra_labels_never_weaken_pod_security():
    plan = plan_team(
        team(),
        offer(),
        labels={"pod-security.kubernetes.io/enforce": "privileged", "owner-ui": "x"},
        annotations={"owner": "a@b"},
    )
    metadata = plan.namespace["namespace"]["metadata"]
    assert metadata["labels"]["pod-security.kubernetes.io/enforce"] == "baseline"
    assert metadata["labels"]["owner-ui"] == "x"
    assert metadata["annotations"] == {"owner": "a@b"}


def test_the_quota_caps_gpu_requests_and_the_limit_range_only_defaults_requests():
    namespace = plan_team(team(quota={"gpus": 4, "cpu": "32", "gpuBorrowingLimit": 2}), offer()).namespace
    hard = namespace["quota"]["spec"]["hard"]
    assert hard["requests.nvidia.com/gpu"] == "6"  # the share with what the team may borrow through Kueue
    assert hard["requests.cpu"] == "32"
    assert hard["services.loadbalancers"] == "2"
    (limits,) = namespace["limits"]["spec"]["limits"]
    assert set(limits) == {"type", "defaultRequest"}  # a default limit below a request would refuse the pod


def test_network_policies_deny_by_default_and_allow_only_the_platforms_needs():
    namespace = plan_team(team(), offer()).namespace
    policies = {key: m["spec"] for key, m in namespace.items() if m["kind"] == "NetworkPolicy"}
    assert policies["deny-all"] == {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]}
    (dns,) = policies["allow-dns"]["egress"]
    assert dns["to"][0]["podSelector"] == {"matchLabels": {"k8s-app": "kube-dns"}}
    assert {(p["protocol"], p["port"]) for p in dns["ports"]} == {("UDP", 53), ("TCP", 53)}
    (scrape,) = policies["allow-prometheus"]["ingress"]
    assert scrape["from"][0]["namespaceSelector"] == {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}
    (webhooks,) = policies["allow-webhooks"]["ingress"]
    assert webhooks == {
        "ports": [{"protocol": "TCP", "port": 9443}],
        "from": [{"ipBlock": {"cidr": PLATFORM["vpcCidr"]}}],
    }
    (https,) = policies["allow-https-egress"]["egress"]
    assert https["ports"] == [{"protocol": "TCP", "port": 443}]  # STS for IRSA, S3, the Kubernetes API
    assert set(policies) == {
        "deny-all",
        "allow-same-namespace",
        "allow-dns",
        "allow-prometheus",
        "allow-webhooks",
        "allow-https-egress",
    }


def test_allowances_follow_the_platform_and_the_team():
    plain = plan_team(
        team(network={"httpsEgress": False, "webhookPorts": []}), offer(monitoringNamespace=None)
    ).namespace
    assert {k for k, m in plain.items() if m["kind"] == "NetworkPolicy"} == {
        "deny-all",
        "allow-same-namespace",
        "allow-dns",
    }


@pytest.mark.parametrize("name", ["kube-system", "gpu-operator", "default", "monitoring"])
def test_a_team_cannot_take_a_namespace_of_kubernetes_or_the_platform(name):
    assert problems(unreserved(name)) == [f"team.name: {name!r} is a namespace of Kubernetes or of the platform"]


def test_a_team_cannot_take_a_namespace_the_platform_already_creates():
    (problem,) = problems(unreserved("team-a"))
    assert problem.startswith(
        "team.name: the platform already creates the namespace 'team-a' (its storage.fsx.namespaces)"
    )


def test_a_team_cannot_take_the_namespace_of_one_of_the_platforms_kubeflow_teams():
    assert PLATFORM["kubeflowTeams"] == ["research"]
    (problem,) = problems(unreserved("research"))
    assert problem.startswith("team.name: the platform's Kubeflow already creates the namespace 'research'")
    assert "team.kubeflow" in problem


# --------------------------------------------------------------------------------------------------- storage


def test_the_team_role_may_use_its_prefix_only_and_the_bucket_key_only_through_s3():
    policy = team_s3_policy(
        partition="aws",
        region="us-west-2",
        bucket="b",
        prefix="teams/vision",
        kms_key_arn="arn:aws:kms:us-west-2:1:key/k",
    )
    listing, objects, key = policy["Statement"]
    assert listing["Condition"] == {"StringLike": {"s3:prefix": ["teams/vision", "teams/vision/*"]}}
    assert objects["Resource"] == "arn:aws:s3:::b/teams/vision/*"
    assert "s3:*" not in objects["Action"]
    assert key["Resource"] == "arn:aws:kms:us-west-2:1:key/k"
    assert key["Condition"]["StringEquals"] == {"kms:ViaService": "s3.us-west-2.amazonaws.com"}
    no_key = team_s3_policy(partition="aws-cn", region="cn-north-1", bucket="b", prefix="p")
    assert len(no_key["Statement"]) == 2
    assert no_key["Statement"][0]["Resource"] == "arn:aws-cn:s3:::b"


def test_the_plan_uses_the_platforms_bucket_and_its_key():
    plan = plan_team(team(storage={"bucket": "datasets"}), offer())
    assert plan.bucket == PLATFORM["buckets"]["datasets"]
    assert plan.bucket_kms_key_arn == PLATFORM["bucketKmsKeyArns"]["datasets"]
    assert team(storage={"bucket": "datasets"}).s3_prefix == "teams/vision"
    assert problems(team(storage={"bucket": "models"})) == [
        "team.storage.bucket: the platform has no bucket 'models'; it has ['artifacts', 'datasets']"
    ]


def test_a_shared_claim_is_a_static_volume_of_the_platforms_file_system_bound_to_it_alone():
    plan = plan_team(team(fsxClaims={"datasets": {}}), offer())
    volume, claim = plan.volumes["datasets"], plan.claims["datasets"]
    assert volume["spec"]["csi"]["volumeHandle"] == PLATFORM["fsxFileSystemId"]
    assert volume["spec"]["claimRef"] == {"namespace": "vision", "name": "datasets"}
    assert volume["spec"]["persistentVolumeReclaimPolicy"] == "Retain"
    assert claim["spec"]["volumeName"] == volume["metadata"]["name"] == "vision-datasets"
    assert volume["spec"]["capacity"] == {"storage": f"{PLATFORM['fsxStorageCapacityGib']}Gi"}


def test_a_claim_of_its_own_uses_the_platforms_class():
    claim = plan_team(team(fsxClaims={"scratch": {"storageClass": True, "sizeGib": 2400}}), offer()).claims["scratch"]
    assert claim["spec"]["storageClassName"] == "fsx-lustre"
    assert claim["spec"]["resources"]["requests"]["storage"] == "2400Gi"


def test_claims_the_platform_cannot_serve_are_refused():
    platform = offer(fsxFileSystemId=None, fsxStorageClass=None)
    assert problems(team(fsxClaims={"datasets": {}, "own": {"storageClass": True, "sizeGib": 1200}}), platform) == [
        "team.fsxClaims.datasets: the platform runs no shared FSx file system (its storage.fsx)",
        "team.fsxClaims.own.storageClass: the platform offers no FSx StorageClass (its storage.fsx.storageClass)",
    ]


# ------------------------------------------------------------------------------------------------ node pool

POOL = {"preset": "gpu-inference-a10g-spot", "limits": {"nvidia.com/gpu": "8"}}


def test_a_team_pool_is_the_platforms_kind_on_its_node_class_tainted_and_labelled_for_the_team():
    manifest = plan_team(team(nodePool=POOL), offer()).node_pool_manifest
    assert manifest is not None
    spec = manifest["spec"]
    assert manifest["metadata"]["name"] == "team-vision"
    assert spec["template"]["spec"]["nodeClassRef"]["name"] == PLATFORM["nodePools"]["inference-a10g-spot"]["nodeClass"]
    taints = spec["template"]["spec"]["taints"]
    assert {"key": "eksml.io/team", "value": "vision", "effect": "NoSchedule"} in taints
    assert {"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"} in taints  # still a GPU pool
    assert spec["template"]["metadata"]["labels"]["eksml.io/team"] == "vision"
    assert spec["limits"] == {"nvidia.com/gpu": "8"}
    assert spec["template"]["spec"]["startupTaints"] == PLATFORM["nodePoolStartupTaints"]


def test_a_team_pool_may_not_be_larger_than_the_platforms_pool_of_its_kind():
    assert problems(team(nodePool={**POOL, "limits": {"nvidia.com/gpu": "64"}})) == [
        (
            "team.nodePool.limits.nvidia.com/gpu: 64 is more than the platform allows a gpu-inference-a10g-spot pool "
            "(32, its pool 'inference-a10g-spot')"
        )
    ]


def test_limits_a_team_does_not_set_are_the_presets_capped_by_the_platforms():
    platform = json.loads(json.dumps(PLATFORM))
    platform["nodePools"]["cpu-general"]["limits"] = {"cpu": "100", "memory": "400Gi"}
    plan = plan_team(
        team(nodePool={"preset": "cpu-general", "limits": {"cpu": "50"}}), offer(nodePools=platform["nodePools"])
    )
    # cpu as set; memory the preset's 4000Gi brought down to the platform's ceiling, not above it
    assert plan.node_pool_manifest is not None
    assert plan.node_pool_manifest["spec"]["limits"] == {"cpu": "50", "memory": "400Gi"}


def test_a_team_pool_of_a_kind_the_platform_does_not_run_is_refused():
    (problem,) = problems(team(nodePool={"preset": "neuron", "limits": {}}))
    assert problem.startswith(
        "team.nodePool.preset: the platform runs no pool of preset 'neuron'; it runs ['cpu-general',"
    )


def test_spot_and_gpu_team_pools_need_the_platforms_interruption_handling_and_gpu_stack():
    platform = offer(karpenterInterruptionQueue=None, gpuTaint=None)
    assert problems(team(nodePool=POOL), platform) == [
        (
            "team.nodePool.preset: gpu-inference-a10g-spot allows spot, but the platform handles no spot "
            "interruptions (no interruption queue)"
        ),
        (
            "team.nodePool.preset: gpu-inference-a10g-spot launches GPUs, but the platform runs no GPU stack (device "
            "plugin, admission)"
        ),
    ]


def test_team_pool_zones_are_the_platforms():
    assert problems(team(nodePool={**POOL, "zones": ["us-east-1a"]})) == [
        (
            "team.nodePool.zones[0]: 'us-east-1a' is not one of the platform's zones ['us-west-2a', 'us-west-2b', "
            "'us-west-2c']"
        )
    ]


# --------------------------------------------------------------------------------------------------- config


def test_team_stack_config_errors_name_their_key_paths_all_at_once():
    raw = {
        "aws:region": "us-west-2",
        "aws:accessKey": "x",
        "tv:platformStack": "prod",
        "tv:team": json.dumps(
            {"name": "Vision", "quota": {"gpus": -1}, "fsxClaims": {"own": {"storageClass": True, "sizeGib": 1000}}}
        ),
    }
    with pytest.raises(ConfigError) as caught:
        parse_team_config(raw, project="tv", stack="prod")
    paths = [issue.path for issue in caught.value.issues]
    assert paths == [
        "aws:accessKey",
        "owner",
        "platformStack",
        "team.fsxClaims.own.sizeGib",
        "team.name",
        "team.quota.gpus",
    ]


def test_one_claim_mounts_the_whole_shared_file_system():
    with pytest.raises(ValueError, match="all claim the shared file system"):
        team(fsxClaims={"a": {}, "b": {}})


def test_a_platform_output_of_the_wrong_shape_is_named():
    outputs = json.loads(json.dumps(PLATFORM))
    del outputs["nodePools"]["training"]["nodeClass"]
    with pytest.raises(PlatformContractError, match=r"output nodePools\.training\.nodeClass: is required"):
        parse_offer(outputs, stack="acme/eks-ml-platform/prod")


# -------------------------------------------------------------------------------------------------- kubeflow

PROFILE_CRD = REPO.parent / "shared" / "reference" / "kubeflow" / "crds" / "kubeflow.org_profiles.yaml"
KUBEFLOW = {"owner": "vision-lead@example.org"}
ROLE = "arn:aws:iam::123456789012:role/identity-role-0123456"


def _strict(schema: dict[str, Any]) -> dict[str, Any]:
    """The CRD schema as the API server prunes with it: a field no `properties` names is an error, except where
    unknown fields are preserved."""
    schema = dict(schema)
    if "properties" in schema and not schema.get("x-kubernetes-preserve-unknown-fields"):
        schema["properties"] = {key: _strict(value) for key, value in schema["properties"].items()}
        schema.setdefault("additionalProperties", False)
    if "items" in schema:
        schema["items"] = _strict(schema["items"])
    return schema


def _profile_schema(api_version: str) -> dict[str, Any]:
    crd = yaml.safe_load(PROFILE_CRD.read_text())
    (version,) = [
        v for v in crd["spec"]["versions"] if f"{crd['spec']['group']}/{v['name']}" == api_version and v["served"]
    ]
    return _strict(version["schema"]["openAPIV3Schema"])


@pytest.mark.skipif(not PROFILE_CRD.exists(), reason="the reference Kubeflow CRDs are not beside the repository")
def test_the_team_profile_is_valid_against_kubeflows_crd_and_caps_the_teams_gpus():
    profile = team_profile(team(quota={"gpus": 6}, kubeflow=KUBEFLOW), ROLE, 6)
    jsonschema.validate(profile, _profile_schema(profile["apiVersion"]))
    assert profile["metadata"] == {"name": "vision"}
    assert profile["spec"]["owner"] == {"kind": "User", "name": "vision-lead@example.org"}
    assert profile["spec"]["resourceQuotaSpec"] == {
        "hard": {
            "requests.nvidia.com/gpu": "6",
            "requests.aws.amazon.com/neuron": "0",
            "requests.aws.amazon.com/neuroncore": "0",
            "requests.aws.amazon.com/neurondevice": "0",
        }
    }
    # annotateOnly: the controller annotates default-editor with the team's role and never edits the role itself
    assert profile["spec"]["plugins"] == [
        {"kind": "AwsIamForServiceAccount", "spec": {"awsIamRole": ROLE, "annotateOnly": True}}
    ]


@pytest.mark.skipif(not PROFILE_CRD.exists(), reason="the reference Kubeflow CRDs are not beside the repository")
def test_the_strict_schema_refuses_a_field_the_crd_does_not_have():
    profile = team_profile(team(kubeflow=KUBEFLOW), ROLE, 8)
    profile["spec"]["resourceQuota"] = profile["spec"].pop("resourceQuotaSpec")
    with pytest.raises(jsonschema.ValidationError, match="resourceQuota"):
        jsonschema.validate(profile, _profile_schema(profile["apiVersion"]))


def test_a_profiles_namespace_carries_the_labels_and_owner_the_profile_controller_expects():
    plan = plan_team(team(kubeflow=KUBEFLOW), offer())
    metadata = plan.namespace["namespace"]["metadata"]
    assert metadata["annotations"] == {"owner": "vision-lead@example.org"}
    assert {k: metadata["labels"][k] for k in PROFILE_NAMESPACE_LABELS} == PROFILE_NAMESPACE_LABELS
    assert metadata["labels"]["eksml.io/team"] == "vision"
    assert metadata["labels"]["pod-security.kubernetes.io/warn"] == "restricted"
    plain = plan_team(team(), offer()).namespace["namespace"]["metadata"]
    assert "annotations" not in plain
    assert "istio-injection" not in plain["labels"]


def test_with_a_profile_the_teams_role_is_for_default_editor():
    assert team(kubeflow=KUBEFLOW).service_account_name == "default-editor"
    assert team(kubeflow=KUBEFLOW, serviceAccount="default-editor").service_account_name == "default-editor"
    assert team(serviceAccount="vision-jobs").service_account_name == "vision-jobs"
    with pytest.raises(ValueError, match="serviceAccount: a Profile's pods run as 'default-editor'"):
        team(kubeflow=KUBEFLOW, serviceAccount="vision-jobs")


def test_a_profiles_namespace_takes_the_same_kubeflow_paths_as_the_platforms_kubeflow_teams():
    from components.kubeflow import teams as kubeflow_teams

    policies = plan_team(team(kubeflow=KUBEFLOW), offer()).namespace
    platform_team = kubeflow_teams.Team(name="vision", owner="lead@example.org", gpu_ceiling=1, s3_prefix="vision")
    platforms = {p["metadata"]["name"]: p for p in kubeflow_teams.network_policies(platform_team, "monitoring")}
    kubeflow_paths = {"allow-istio-gateway", "allow-notebook-culler", "allow-istiod", "allow-kubeflow-services"}
    kubeflow_paths.add("allow-gateway-in-cluster")
    assert kubeflow_paths <= set(platforms)
    assert {name: policies[name] for name in kubeflow_paths} == {name: platforms[name] for name in kubeflow_paths}
    # no namespace-wide opening to Istio's or Kubeflow's namespaces any more
    assert "allow-kubeflow" not in policies
    assert not kubeflow_paths & set(plan_team(team(), offer()).namespace)


def test_a_profile_on_a_platform_without_kubeflow_is_refused_naming_the_key():
    expected = [
        (
            "team.kubeflow: the platform runs no Kubeflow (its kubeflow.enabled), so no profile controller would "
            "take the team's Profile"
        )
    ]
    assert problems(team(kubeflow=KUBEFLOW), offer(kubeflowEnabled=False)) == expected
    assert (
        problems(team(kubeflow=KUBEFLOW), offer(kubeflowEnabled=None)) == expected
    )  # a platform older than the output
    plan_team(team(), offer(kubeflowEnabled=False))  # without a Profile the team does not need it


def test_a_profile_owner_must_be_an_email():
    raw = {
        "aws:region": "us-west-2",
        "tv:platformStack": "a/b/c",
        "tv:owner": "x",
        "tv:team": json.dumps({"name": "vision", "quota": {"gpus": 1}, "kubeflow": {"owner": "vision"}}),
    }
    with pytest.raises(ConfigError) as caught:
        parse_team_config(raw, project="tv", stack="prod")
    ((path, message),) = [(issue.path, issue.message) for issue in caught.value.issues]
    assert path == "team.kubeflow.owner"
    assert "an email address" in message


def test_on_a_pod_identity_platform_the_teams_pods_reach_the_agent_for_credentials_and_only_there():
    """EKS Pod Identity serves credentials from a link-local agent on port 80, which the namespace's egress deny
    (443 out only) closed: the team's role was unusable. IRSA's STS call goes over 443 and needs no such path."""
    from components.tools.cluster_model.flows import problems as flow_problems
    from components.tools.cluster_model.network import Cluster

    plan = plan_team(team(), offer(identity="podIdentity"))
    cluster = Cluster(list(plan.namespace.values()), [], pod_identity=[("vision", "vision")])
    assert [p for p in flow_problems(cluster) if "Pod Identity agent" in p] == []
    (agent,) = plan.namespace["allow-pod-identity-agent"]["spec"]["egress"]
    assert agent == {"to": [{"ipBlock": {"cidr": "169.254.170.23/32"}}], "ports": [{"protocol": "TCP", "port": 80}]}
    assert "allow-pod-identity-agent" not in plan_team(team(), offer()).namespace


MIRROR = {"mirror": {"cidr": "10.8.0.0/16", "ports": [8081]}, "git": {"cidr": "0.0.0.0/0", "ports": [22]}}


def test_a_teams_egress_opens_each_range_on_its_ports_and_the_model_judges_it_open():
    """Package mirrors, git over SSH, databases: egress beyond HTTPS that the default (443 only) closed."""
    from components.tools.cluster_model.flows import problems as flow_problems
    from components.tools.cluster_model.network import Cluster

    namespace = plan_team(team(network={"egress": MIRROR}), offer()).namespace
    (git,) = namespace["allow-egress-git"]["spec"]["egress"]
    assert git == {
        "to": [{"ipBlock": {"cidr": "0.0.0.0/0", "except": ["169.254.169.254/32"]}}],
        "ports": [{"protocol": "TCP", "port": 22}],
    }
    assert flow_problems(Cluster(list(namespace.values()), [])) == []
    without = [m for k, m in namespace.items() if k != "allow-egress-mirror"]
    (found,) = flow_problems(Cluster(without, []))
    assert found.startswith("a new pod in team namespace vision cannot reach 10.8.0.0/16 (mirror) on port 8081")
    assert "NetworkPolicy vision/deny-all" in found


def test_a_teams_egress_to_a_range_holding_the_metadata_service_leaves_it_out_and_the_model_holds_it_closed():
    """0.0.0.0/0 on port 80 (a package mirror over HTTP) must not hand pods the node role's credentials (IMDS)."""
    from components.tools.cluster_model.flows import problems as flow_problems
    from components.tools.cluster_model.network import Cluster

    namespace = plan_team(team(network={"egress": {"http": {"cidr": "0.0.0.0/0", "ports": [80]}}}), offer()).namespace
    (rule,) = namespace["allow-egress-http"]["spec"]["egress"]
    assert rule["to"] == [{"ipBlock": {"cidr": "0.0.0.0/0", "except": ["169.254.169.254/32"]}}]
    assert flow_problems(Cluster(list(namespace.values()), [])) == []
    opened = copy.deepcopy(namespace)
    del opened["allow-egress-http"]["spec"]["egress"][0]["to"][0]["ipBlock"]["except"]
    (found,) = flow_problems(Cluster(list(opened.values()), []))
    assert found == (
        "a new pod in team namespace vision can reach the EC2 instance metadata service on port 80, which hands out "
        "the node role's credentials"
    )


def test_by_default_a_team_namespace_opens_no_egress_but_https():
    policies = plan_team(team(), offer()).namespace
    assert not any(k.startswith("allow-egress-") for k in policies)


@pytest.mark.parametrize(
    ("egress", "key", "expected"),
    [
        ({"db": {"cidr": "10.0.0.1/16", "ports": [5432]}}, "team.network.egress.db.cidr", "no host bits set"),
        ({"db": {"cidr": "10.0.0.0/16", "ports": [70000]}}, "team.network.egress.db.ports", "65535"),
        ({"db": {"cidr": "10.0.0.0/16", "ports": []}}, "team.network.egress.db.ports", "at least 1"),
        (
            {"db": {"cidr": "10.0.0.0/16", "ports": [5432], "protocol": "SCTP"}},
            "team.network.egress.db.protocol",
            "TCP",
        ),
    ],
)
def test_a_bad_egress_entry_is_refused_naming_its_key(egress, key, expected):
    raw = {
        "team-vision:platformStack": "acme/eks-ml-platform/prod",
        "team-vision:owner": "vision-leads",
        "team-vision:team": json.dumps({"name": "vision", "quota": {"gpus": 1}, "network": {"egress": egress}}),
    }
    with pytest.raises(ConfigError) as caught:
        parse_team_config(raw, project="team-vision", stack="dev")
    messages = [str(issue) for issue in caught.value.issues]
    assert any(m.startswith(key) and expected in m for m in messages), messages
