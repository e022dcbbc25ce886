"""Karpenter: controller permissions, interruption handling, the two releases, and the order destroy relies on."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from components import versions
from components.karpenter.iam import INTERRUPTION_EVENTS, ControllerScope, controller_policy

REFERENCE = Path(__file__).resolve().parents[2] / "shared" / "reference" / "karpenter"
needs_reference = pytest.mark.skipif(not REFERENCE.exists(), reason="../shared/reference is not beside the repository")

SCOPE = ControllerScope(
    partition="aws",
    region="us-west-2",
    account_id="123456789012",
    cluster_name="ml",
    node_role_arn="arn:aws:iam::123456789012:role/ml-node",
    queue_arn="arn:aws:sqs:us-west-2:123456789012:ml-interruption",
)


def _granted(policy):
    for statement in policy["Statement"]:
        actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
        for action in actions:
            yield action, statement


def _controller(inventory):
    return inventory.release("karpenter")


def _crds(inventory):
    return inventory.release("karpenter-crd")


@needs_reference
def test_controller_policy_grants_every_upstream_action_of_the_pinned_version():
    required = {
        line.split("\t")[0]
        for line in (REFERENCE / "controller-actions.txt").read_text().splitlines()
        if line and not line.startswith("#")
    }
    granted = {action for action, _ in _granted(controller_policy(SCOPE))}
    # Optional ones included: 1.14's zonal-shift read must be there before settings.enableZonalShift is turned on.
    assert required - granted == set()
    assert "iam:ListInstanceProfiles" in granted  # without it the EC2NodeClass finalizer hangs


def test_zonal_shift_status_is_readable_for_this_cluster_only():
    statement = next(s for s in controller_policy(SCOPE)["Statement"] if s["Sid"] == "AllowZonalShiftStatusReadOnly")
    assert statement["Action"] == "arc-zonal-shift:GetManagedResource"
    assert statement["Condition"] == {
        "StringEquals": {
            "arc-zonal-shift:ResourceIdentifier": (
                f"arn:aws:eks:{SCOPE.region}:{SCOPE.account_id}:cluster/{SCOPE.cluster_name}"
            )
        }
    }


def test_controller_may_pass_only_the_node_role_and_only_to_ec2():
    passes = [s for a, s in _granted(controller_policy(SCOPE)) if a == "iam:PassRole"]
    assert passes == [
        {
            "Sid": "AllowPassingInstanceRole",
            "Effect": "Allow",
            "Action": "iam:PassRole",
            "Resource": SCOPE.node_role_arn,
            "Condition": {"StringEquals": {"iam:PassedToService": ["ec2.amazonaws.com", "ec2.amazonaws.com.cn"]}},
        }
    ]


def test_controller_can_terminate_only_this_clusters_karpenter_instances():
    (statement,) = [s for a, s in _granted(controller_policy(SCOPE)) if a == "ec2:TerminateInstances"]
    assert statement["Condition"] == {
        "StringEquals": {"aws:ResourceTag/kubernetes.io/cluster/ml": "owned"},
        "StringLike": {"aws:ResourceTag/karpenter.sh/nodepool": "*"},
    }


def test_controller_policy_has_no_wildcard_actions_and_unscoped_resources_only_for_reads():
    unscoped_ok = {"pricing:GetProducts", "iam:ListInstanceProfiles"}
    for action, statement in _granted(controller_policy(SCOPE)):
        assert "*" not in action
        if statement["Resource"] == "*" and action == "arc-zonal-shift:GetManagedResource":
            assert "arc-zonal-shift:ResourceIdentifier" in statement["Condition"]["StringEquals"]
        elif statement["Resource"] == "*" and action not in unscoped_ok:
            assert action.startswith("ec2:Describe")
            assert statement["Condition"] == {"StringEquals": {"aws:RequestedRegion": "us-west-2"}}


def test_interruption_rules_match_karpenters_events_literally(dev):
    rules = {r.name: json.loads(r.inputs["eventPattern"]) for r in dev.of_type("aws:cloudwatch/eventRule:EventRule")}
    assert rules == {
        "karpenter-scheduled-change": {"source": ["aws.health"], "detail-type": ["AWS Health Event"]},
        "karpenter-spot-interruption": {
            "source": ["aws.ec2"],
            "detail-type": ["EC2 Spot Instance Interruption Warning"],
        },
        "karpenter-rebalance": {"source": ["aws.ec2"], "detail-type": ["EC2 Instance Rebalance Recommendation"]},
        "karpenter-instance-state-change": {
            "source": ["aws.ec2"],
            "detail-type": ["EC2 Instance State-change Notification"],
        },
        "karpenter-capacity-reservation-interruption": {
            "source": ["aws.ec2"],
            "detail-type": ["EC2 Capacity Reservation Instance Interruption Warning"],
        },
    }


@needs_reference
def test_interruption_events_are_exactly_the_reference_rules():
    reference = yaml.safe_load((REFERENCE / "interruption.yaml").read_text())["eventbridge_rules"]
    expected = sorted((r["source"][0], r["detail-type"][0]) for r in reference)
    assert sorted(INTERRUPTION_EVENTS.values()) == expected


def test_every_rule_targets_the_interruption_queue(dev):
    queue = dev.one("aws:sqs/queue:Queue")
    targets = dev.of_type("aws:cloudwatch/eventTarget:EventTarget")
    assert len(targets) == 5
    assert {t.inputs["arn"] for t in targets} == {queue.outputs["arn"]}


def test_queue_is_encrypted_short_lived_and_accepts_only_eventbridge_over_tls(dev):
    queue = dev.one("aws:sqs/queue:Queue")
    assert queue.inputs["sqsManagedSseEnabled"] is True
    assert queue.inputs["messageRetentionSeconds"] == 300
    policy = json.loads(dev.one("aws:sqs/queuePolicy:QueuePolicy").inputs["policy"])
    allow, deny = policy["Statement"]
    assert allow["Principal"] == {"Service": ["events.amazonaws.com", "sqs.amazonaws.com"]}
    assert allow["Action"] == "sqs:SendMessage"
    assert allow["Resource"] == queue.outputs["arn"]
    assert deny["Effect"] == "Deny"
    assert deny["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
    # SQS attaches a policy to the queue named by its URL (pulumi-aws QueuePolicy.queueUrl, required).
    assert dev.one("aws:sqs/queuePolicy:QueuePolicy").inputs["queueUrl"] == queue.outputs["url"]
    assert queue.outputs["url"].startswith("https://sqs.us-west-2.amazonaws.com/123456789012/")


def test_controller_role_trusts_exactly_the_service_account_the_chart_creates(dev):
    values = _controller(dev).inputs["values"]
    namespace = _controller(dev).inputs["namespace"]
    role = dev.one("aws:iam/role:Role", "karpenter-controller-role")
    (statement,) = json.loads(role.inputs["assumeRolePolicy"])["Statement"]
    subject = next(v for k, v in statement["Condition"]["StringEquals"].items() if k.endswith(":sub"))
    assert subject == f"system:serviceaccount:{namespace}:{values['serviceAccount']['name']}"
    assert values["serviceAccount"]["annotations"]["eks.amazonaws.com/role-arn"] == role.outputs["arn"]


def test_nodes_join_through_an_ec2_linux_access_entry_for_the_node_role(dev):
    entry = dev.one("aws:eks/accessEntry:AccessEntry")
    role = dev.one("aws:iam/role:Role", "karpenter-node")
    assert entry.inputs == {
        "clusterName": "eks-ml-platform-dev",
        "principalArn": role.outputs["arn"],
        "type": "EC2_LINUX",
    }


def test_both_releases_are_pinned_and_the_controller_leaves_crds_to_the_crd_release(dev):
    controller, crds = _controller(dev), _crds(dev)
    for release in (controller, crds):
        assert release.inputs["version"] == versions.KARPENTER.version
        assert release.inputs["chart"].startswith("oci://public.ecr.aws/karpenter/")
    assert controller.inputs["skipCrds"] is True


def test_controller_runs_only_on_system_nodes_with_interruption_handling(dev):
    values = _controller(dev).inputs["values"]
    assert values["nodeSelector"]["eksml.io/node-role"] == "system"
    assert {"key": "CriticalAddonsOnly", "operator": "Exists", "effect": "NoSchedule"} in values["tolerations"]
    assert values["replicas"] == 2
    assert values["settings"]["interruptionQueue"] == dev.one("aws:sqs/queue:Queue").outputs["name"]
    assert values["settings"]["clusterName"] == "eks-ml-platform-dev"


def test_controller_talks_to_this_clusters_endpoint(dev):
    kubeconfig = json.loads(dev.one("eks:index:Cluster").outputs["kubeconfigJson"])
    endpoint = _controller(dev).inputs["values"]["settings"]["clusterEndpoint"]
    assert endpoint == kubeconfig["clusters"][0]["cluster"]["server"]
    assert endpoint.startswith("https://")


def test_controller_survives_a_node_or_zone_loss_and_drains_one_replica_at_a_time(dev):
    values = _controller(dev).inputs["values"]
    # Two replicas in different zones, and a voluntary eviction (a system node drain) never takes both.
    assert values["topologySpreadConstraints"] == [
        {"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "DoNotSchedule"}
    ]
    assert values["podDisruptionBudget"] == {"name": "karpenter", "maxUnavailable": 1}


def test_controller_memory_is_guaranteed_so_it_is_not_evicted_under_node_pressure(dev):
    resources = _controller(dev).inputs["values"]["controller"]["resources"]
    assert resources == {"requests": {"cpu": "1000m", "memory": "1024Mi"}, "limits": {"memory": "1024Mi"}}
    assert resources["requests"]["memory"] == resources["limits"]["memory"]


def test_controller_release_waits_for_everything_it_needs_so_destroy_removes_it_first(dev):
    controller = _controller(dev)
    # Its CRDs go with the cluster (no delete call): it waits for them on create only (its cluster name value), so
    # no edge adds a level to destroy; the pools and classes, whose CRDs they are, keep theirs.
    crds = _crds(dev)
    assert crds.deleted_with == dev.one("eks:index:Cluster").urn
    assert not dev.depends_on(controller, crds)
    assert controller.inputs["values"]["settings"]["clusterName"] == "eks-ml-platform-dev"
    assert all(dev.depends_on(r, crds) for r in dev.of_type(NODE_POOL) + dev.of_type(NODE_CLASS))
    for needed in (
        dev.one("aws:iam/rolePolicy:RolePolicy", "karpenter-controller-controller"),
        dev.one("aws:iam/role:Role", "karpenter-controller-role"),
        dev.one("aws:sqs/queue:Queue"),
        dev.one("aws:sqs/queuePolicy:QueuePolicy"),
        dev.one("aws:eks/accessEntry:AccessEntry"),
        dev.one("aws:eks/nodeGroup:NodeGroup"),
    ):
        assert dev.depends_on(controller, needed), needed.name


@pytest.mark.stack
def test_log_level_comes_from_config():
    from tests.conftest import run_stack

    inventory = run_stack("dev", {"karpenter": {"logLevel": "debug"}})
    assert _controller(inventory).inputs["values"]["logLevel"] == "debug"


# ------------------------------------------------------------------------------------------- pools and classes

NODE_POOL = "kubernetes:karpenter.sh/v1:NodePool"
NODE_CLASS = "kubernetes:karpenter.k8s.aws/v1:EC2NodeClass"


def _by_name(inventory, type_):
    return {r.inputs["metadata"]["name"]: r for r in inventory.of_type(type_)}


def test_pools_and_classes_are_deleted_before_the_controller_and_in_one_level(prod):
    """A pool waits for its class on create only: on destroy the class's finalizer waits for the pool's nodes
    anyway (its delete timeout covers their drains), so the two go in one level."""
    from components.tools.preview.destroy_estimate import estimate

    controller = _controller(prod)
    classes = _by_name(prod, NODE_CLASS)
    level = {r.urn: i for i, batch in enumerate(estimate(prod).batches) for r in batch.resources}
    for name, node_pool in _by_name(prod, NODE_POOL).items():
        node_class = classes[node_pool.inputs["spec"]["template"]["spec"]["nodeClassRef"]["name"]]
        assert prod.depends_on(node_pool, controller), name
        assert not prod.depends_on(node_pool, node_class), name
        assert level[node_pool.urn] == level[node_class.urn], name
        assert node_class.delete_timeout is not None
        assert node_pool.delete_timeout is not None
    for node_class in classes.values():
        assert prod.depends_on(node_class, controller)


def test_node_classes_use_the_tagged_cluster_security_group_and_the_karpenter_node_role(dev):
    tag = next(t for t in dev.of_type("aws:ec2/tag:Tag") if t.inputs["resourceId"].startswith("sg-"))
    cluster = dev.one("eks:index:Cluster")
    assert tag.inputs == {
        "resourceId": cluster.outputs["clusterSecurityGroupId"],
        "key": "karpenter.sh/discovery",
        "value": "eks-ml-platform-dev",
    }
    role = dev.one("aws:iam/role:Role", "karpenter-node")
    for node_class in _by_name(dev, NODE_CLASS).values():
        assert dev.depends_on(node_class, tag)
        assert node_class.inputs["spec"]["role"] == role.outputs["name"]
        assert node_class.inputs["spec"]["tags"]["owner"] == "ml-platform"


def test_stack_file_pools_become_node_pools_with_their_gpu_ceilings(dev, prod):
    dev_pools = _by_name(dev, NODE_POOL)
    assert set(dev_pools) == {"cpu-general", "gpu-inference"}
    assert dev_pools["gpu-inference"].inputs["spec"]["limits"] == {"nvidia.com/gpu": "4"}
    assert dev.stack_outputs["nodePoolGpuLimits"] == {"cpu-general": None, "gpu-inference": 4}
    prod_pools = _by_name(prod, NODE_POOL)
    weights = {name: p.inputs["spec"].get("weight") for name, p in prod_pools.items()}
    assert weights == {
        "cpu-general": None,
        "inference-a10g-spot": 100,
        "inference-t4-spot": 50,
        "inference-a10g-on-demand": 10,
        "training": None,
    }
    training = prod_pools["training"].inputs["spec"]
    assert training["disruption"]["consolidationPolicy"] == "WhenEmpty"
    assert {"nodes": "0", "schedule": "0 6 * * mon-fri", "duration": "14h"} in training["disruption"]["budgets"]


@pytest.mark.stack
def test_without_fsx_pools_wait_only_for_the_ebs_csi_agent():
    from tests.conftest import run_stack

    inventory = run_stack("dev", {"storage": {"buckets": {"datasets": {}}}})
    for node_pool in _by_name(inventory, NODE_POOL).values():
        assert node_pool.inputs["spec"]["template"]["spec"]["startupTaints"] == [
            {"key": "ebs.csi.aws.com/agent-not-ready", "effect": "NoExecute"}
        ]


def test_every_pool_bounds_its_drains_and_pulumi_waits_as_long_as_they_may_take(prod):
    pools = {r.inputs["metadata"]["name"]: r for r in prod.of_type("kubernetes:karpenter.sh/v1:NodePool")}
    for name, pool in pools.items():
        grace = pool.inputs["spec"]["template"]["spec"]["terminationGracePeriod"]
        assert grace, name  # Karpenter has no default: a pod whose budget never allows eviction would keep the node
    # 15 minutes of grace (the default) plus 15 of termination; the training preset's 2 hours plus 15.
    assert pools["cpu-general"].delete_timeout == "30m"
    assert pools["training"].delete_timeout == "135m"
    classes = {r.inputs["metadata"]["name"]: r for r in prod.of_type("kubernetes:karpenter.k8s.aws/v1:EC2NodeClass")}
    assert classes["gpu-training"].delete_timeout == "135m"  # the longest drain among the pools that use it
    assert classes["default"].delete_timeout == "30m"


def test_go_durations_are_read_as_karpenter_writes_them():
    from components.karpenter.validation import delete_timeout, duration_seconds

    assert [duration_seconds(d) for d in ("90s", "15m", "1h30m", "2h")] == [90, 900, 5400, 7200]
    assert delete_timeout(["90s"]) == "17m"  # rounded up to whole minutes
