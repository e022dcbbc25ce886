"""How long a delete typically takes, by resource type, for the destroy estimate; every figure says where it comes from.

Figures are seconds for an idle stack. A `Rule` matches a type exactly or by a glob (the most specific glob wins);
its first `Variant` whose inputs match overrides the figure. Sources, cited by their short names:

- TF-DESTROY: public `terraform destroy` logs of EKS stacks (VPC, NAT, EKS, a managed node group), e.g.
  Saptak-cyber/DevOps_Assignments (final-devops-project/README.md, 2026): cluster 2m31s, node group 8m21s, NAT
  1m19s, EIP 9s, add-on 9s, VPC 0s; other logs found by exact-string search: cluster 1m9s to 8m42s (median about
  3 min), node group 4m12s to 6m21s, NAT 42s to 1m34s, S3 gateway endpoint 6-7s, route tables 1-2s.
- FSX-TIMES: awslabs/ai-on-eks (fsx-for-lustre.tf: creation "up to 10 mins", association "up to 7 mins");
  hashicorp/terraform-provider-aws#22291 (FSx acceptance tests, 577-814 s create plus destroy);
  aws-samples/amazon-eks-machine-learning-with-terraform-and-kubeflow#112 (association delete timeout raised to 30 min).
- SWEEP: the platform's own sweep (components/sweep): when the controllers cleaned up it lists and finds nothing,
  one call per kind.
- estimate: no public figure; an API call plus the provider's wait, judged.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from .inventory import Recorded


@dataclass(frozen=True)
class Variant:
    #: Input path (dotted) -> glob the input's value must match, as a string.
    when: Mapping[str, str]
    seconds: int
    source: str


@dataclass(frozen=True)
class Rule:
    seconds: int
    source: str
    variants: tuple[Variant, ...] = ()


def _chart(glob: str, seconds: int, source: str) -> Variant:
    return Variant(MappingProxyType({"chart": glob}), seconds, source)


#: Delete figures by type (exact, or a glob: the most specific one wins).
RULES: Mapping[str, Rule] = MappingProxyType(
    {
        # The engine itself: providers and components make no cloud call.
        "pulumi:providers:*": Rule(0, "engine: no cloud call"),
        "random:*": Rule(0, "engine: local state only"),
        # pulumi-eks' cluster is a remote component: its OIDC provider, IAM role and access entries are hidden
        # from the mocks and go after its visible children.
        "eks:index:Cluster": Rule(12, "estimate: the component's hidden children (OIDC provider, role, entries)"),
        # Network.
        "aws:ec2/vpc:Vpc": Rule(6, "TF-DESTROY (0-6s)"),
        "aws:ec2/subnet:Subnet": Rule(6, "TF-DESTROY (a few seconds once no interface is left)"),
        "aws:ec2/internetGateway:InternetGateway": Rule(18, "estimate (detach, then delete)"),
        "aws:ec2/eip:Eip": Rule(9, "TF-DESTROY (9s)"),
        "aws:ec2/natGateway:NatGateway": Rule(72, "TF-DESTROY (42s-1m34s; 1m19s in the full-stack log)"),
        "aws:ec2/routeTable:RouteTable": Rule(3, "TF-DESTROY (1-2s)"),
        "aws:ec2/routeTableAssociation:RouteTableAssociation": Rule(1, "TF-DESTROY (1s)"),
        "aws:ec2/defaultSecurityGroup:DefaultSecurityGroup": Rule(1, "estimate (removes rules only)"),
        "aws:ec2/securityGroup:SecurityGroup": Rule(6, "TF-DESTROY (2-5s)"),
        "aws:vpc/securityGroup*Rule:*": Rule(2, "TF-DESTROY (2-5s a rule)"),
        "aws:ec2/tag:Tag": Rule(2, "estimate (one API call)"),
        "aws:ec2/vpcEndpoint:VpcEndpoint": Rule(
            7,
            "TF-DESTROY (S3 gateway endpoint 6-7s)",
            (
                Variant(
                    MappingProxyType({"vpcEndpointType": "Interface"}),
                    90,
                    "estimate (an interface endpoint deletes an interface in every subnet)",
                ),
            ),
        ),
        "aws:ec2/launchTemplate:LaunchTemplate": Rule(3, "TF-DESTROY (a few seconds)"),
        # Identity, keys, logs, queues, buckets: one or two API calls each.
        "aws:iam/role:Role": Rule(6, "TF-DESTROY (a few seconds; detaches its policies first)"),
        "aws:iam/*": Rule(3, "TF-DESTROY (2-4s)"),
        "aws:kms/key:Key": Rule(3, "estimate (only schedules the key's deletion)"),
        "aws:cloudwatch/*": Rule(3, "estimate (one API call)"),
        "aws:sqs/queue:Queue": Rule(6, "estimate (the provider waits for the queue to go)"),
        "aws:sqs/*": Rule(3, "estimate (one API call)"),
        "aws:s3/bucket:Bucket": Rule(6, "estimate (forceDestroy empties it first; a large bucket takes minutes)"),
        "aws:s3/bucket*:*": Rule(3, "estimate (one API call)"),
        # EKS.
        "aws:eks/cluster:Cluster": Rule(180, "TF-DESTROY (1m9s-8m42s, median about 3 min; 2m31s in the full log)"),
        "aws:eks/nodeGroup:NodeGroup": Rule(360, "TF-DESTROY (4m12s-8m21s: drain, terminate, delete the ASG)"),
        "aws:eks/addon:Addon": Rule(9, "TF-DESTROY (9s)"),
        "aws:eks/accessEntry:AccessEntry": Rule(6, "estimate (one API call)"),
        # FSx for Lustre.
        "aws:fsx/lustreFileSystem:LustreFileSystem": Rule(
            300,
            "FSX-TIMES; delete estimate",
            (
                Variant(
                    MappingProxyType({"deploymentType": "PERSISTENT_*"}),
                    900,
                    "FSX-TIMES; delete estimate (a persistent file system takes a final backup unless told not to)",
                ),
            ),
        ),
        "aws:fsx/dataRepositoryAssociation:DataRepositoryAssociation": Rule(
            300, "FSX-TIMES (scales with the objects imported)"
        ),
        # In the cluster. Helm uninstalls, then waits for what the chart made.
        "kubernetes:helm.sh/v3:Release": Rule(
            30,
            "estimate (helm uninstall and its wait)",
            (
                _chart("*karpenter-crd", 12, "estimate (CRDs only, no pods)"),
                _chart("*kube-prometheus-stack", 60, "estimate (operator, Prometheus and Grafana go in turn)"),
                _chart("*neuron-helm-chart", 18, "estimate (a DaemonSet only)"),
                _chart("*aws-efa-k8s-device-plugin", 18, "estimate (a DaemonSet only)"),
                _chart("*prometheus-adapter", 18, "estimate (one Deployment, its Service and APIService)"),
            ),
        ),
        "kubernetes:apps/v1:*": Rule(18, "estimate (Pulumi waits for the pods to go)"),
        "kubernetes:kubeflow.org/v1:Profile": Rule(18, "estimate (the profile controller's finalizer)"),
        "kubernetes:karpenter.sh/v1:NodePool": Rule(120, "estimate (Karpenter drains and terminates an idle pool)"),
        "kubernetes:karpenter.k8s.aws/v1:EC2NodeClass": Rule(18, "estimate (its finalizer removes instance profiles)"),
        "kubernetes:core/v1:Namespace": Rule(30, "estimate (waits until the namespace's contents are gone)"),
        "kubernetes:core/v1:PersistentVolumeClaim": Rule(6, "estimate (one API call)"),
        "kubernetes:*": Rule(3, "estimate (one API call)"),
        # The platform's sweeps (dynamic resources): what each lists.
        "pulumi-python:dynamic:Resource": Rule(
            30,
            "SWEEP (lists every kind it covers)",
            (
                Variant(MappingProxyType({"kinds": "*'instance'*"}), 30, "SWEEP (lists nine kinds)"),
                Variant(MappingProxyType({"kinds": "['file-system']"}), 18, "SWEEP (lists file systems)"),
                Variant(MappingProxyType({"kinds": "*network-interface*"}), 18, "SWEEP (lists three kinds)"),
            ),
        ),
    }
)
DEFAULT = Rule(6, "estimate (one API call plus the provider's wait)")
#: The package's own components: nothing to delete in AWS.
COMPONENT_PREFIXES = ("eksml:",)


def _input(inputs: Mapping[str, Any], path: str) -> Any:
    value: Any = inputs
    for part in path.split("."):
        if not isinstance(value, Mapping) or part not in value:
            return None
        value = value[part]
    return value


def rule_for(type_: str) -> Rule:
    if type_ in RULES:
        return RULES[type_]
    globs = [glob for glob in RULES if "*" in glob and fnmatch.fnmatchcase(type_, glob)]
    if not globs:
        return DEFAULT
    return RULES[max(globs, key=lambda glob: len(glob.replace("*", "")))]


def delete_figure(resource: Recorded) -> tuple[int, str]:
    """A typical delete of this resource, in seconds, and where the figure comes from."""
    if resource.type.startswith(COMPONENT_PREFIXES):
        return 0, "component: nothing to delete"
    rule = rule_for(resource.type)
    for variant in rule.variants:
        if all(
            (value := _input(resource.inputs, path)) is not None and fnmatch.fnmatchcase(str(value), glob)
            for path, glob in variant.when.items()
        ):
            return variant.seconds, variant.source
    return rule.seconds, rule.source
