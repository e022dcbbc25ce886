"""What a ClusterHandle for a cluster this program did not create is read from: the platform stack's outputs, or AWS.

    handle = ClusterHandle.from_stack_reference("acme/eks-ml-platform/prod")
    handle = ClusterHandle.from_existing(cluster_name="ml-prod", region="us-west-2")

The handle is the same typed object the platform's own parts take. Its resources of the other stack (the system node
group, the coredns and EBS CSI add-ons) are read, not managed: this program never changes or deletes them. Its
Kubernetes provider authenticates with `aws eks get-token` as whoever runs this program (`aws_profile`), not as the
platform's deployer: that identity needs an access entry of its own on the cluster.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

import pulumi
import pulumi_aws as aws
from pulumi.runtime.sync_await import _sync_await

from ..scheduling import SYSTEM_PLACEMENT

#: The platform stack's outputs a handle is made of (README, "Using the components in another stack").
HANDLE_OUTPUTS = (
    "availabilityZones",
    "clusterCertificateAuthority",
    "clusterEndpoint",
    "clusterName",
    "clusterSecurityGroupId",
    # How pods get AWS credentials (irsa or podIdentity): the team's roles follow the platform's choice.
    "identity",
    "kubernetesVersion",
    "oidcIssuer",
    "oidcProviderArn",
    "privateSubnetIds",
    "region",
    "systemNodeGroup",
    "vpcId",
)
#: Outputs a platform of an earlier release did not export, with what their absence means: such a platform ran IRSA.
OPTIONAL_HANDLE_OUTPUTS = {"identity": "irsa"}


class AttachError(Exception):
    """The platform to attach to is not there, or not what this package expects."""


def certificate_authority_of(kubeconfig_json: str) -> str:
    """The cluster's CA bundle (base64) in a pulumi-eks kubeconfig."""
    return json.loads(kubeconfig_json)["clusters"][0]["cluster"]["certificate-authority-data"]


def kubeconfig(
    *, cluster_name: str, endpoint: str, certificate_authority: str, region: str, profile: str | None
) -> str:
    """A kubeconfig whose token comes from `aws eks get-token` (as the given AWS CLI profile, else the ambient
    credentials): it carries no credentials itself."""
    exec_: dict[str, Any] = {
        "apiVersion": "client.authentication.k8s.io/v1beta1",
        "command": "aws",
        "args": ["eks", "get-token", "--cluster-name", cluster_name, "--region", region, "--output", "json"],
    }
    if profile:
        exec_["env"] = [{"name": "AWS_PROFILE", "value": profile}]
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {"name": cluster_name, "cluster": {"server": endpoint, "certificate-authority-data": certificate_authority}}
        ],
        "contexts": [{"name": cluster_name, "context": {"cluster": cluster_name, "user": cluster_name}}],
        "current-context": cluster_name,
        "users": [{"name": cluster_name, "user": {"exec": exec_}}],
    }
    return json.dumps(config, sort_keys=True)


def arn_account_and_partition(arn: str) -> tuple[str, str]:
    """(account, partition) of an ARN; the OIDC provider's are the cluster's, where IRSA roles must live."""
    parts = arn.split(":")
    if len(parts) < 6 or parts[0] != "arn" or not parts[4].isdigit():
        raise AttachError(f"{arn!r} is not an IAM ARN with an account")
    return parts[4], parts[1]


def read_outputs(
    ref: pulumi.StackReference, names: Iterable[str], *, stack: str, required: Iterable[str] = ()
) -> dict[str, Any]:
    """The named outputs of a referenced stack as plain values (absent ones left out); AttachError naming every
    required one that is missing.

    Read plainly, on purpose: the handle's region, version and zones are plain fields, and a team's pool is checked
    against the platform's before anything is registered. Pulumi reads a StackReference during preview too, so the
    values are known in both. (`get_output_details` is the SDK's way to read one output's value; it is a coroutine,
    awaited here as the SDK awaits its own synchronous invokes.)"""
    values: dict[str, Any] = {}
    for name in sorted(set(names)):
        details = _sync_await(ref.get_output_details(name))
        value = details.value if details.value is not None else details.secret_value
        if value is not None:
            values[name] = value
    missing = sorted(set(required) - set(values))
    if missing:
        raise AttachError(
            f"the platform stack {stack} has no output {', '.join(missing)}: is it deployed, and on a version that "
            "exports them?"
        )
    return values


def stack_outputs(stack: str | pulumi.StackReference, *, opts: pulumi.ResourceOptions | None = None) -> dict[str, Any]:
    """The handle's outputs of a platform stack (`org/project/stack`, or a StackReference to it)."""
    ref = (
        stack
        if isinstance(stack, pulumi.StackReference)
        else pulumi.StackReference("platform", stack_name=stack, opts=opts)
    )
    stack_name = _sync_await(ref.name.future()) if isinstance(stack, pulumi.StackReference) else stack
    found = read_outputs(
        ref, HANDLE_OUTPUTS, stack=str(stack_name), required=set(HANDLE_OUTPUTS) - set(OPTIONAL_HANDLE_OUTPUTS)
    )
    return {**OPTIONAL_HANDLE_OUTPUTS, **found}


def _system_node_group(cluster_name: str, invoke: pulumi.InvokeOptions) -> str:
    """The node group labelled as the platform labels its system nodes."""
    names = aws.eks.get_node_groups(cluster_name=cluster_name, opts=invoke).names
    for group in sorted(names):
        labels = aws.eks.get_node_group(cluster_name=cluster_name, node_group_name=group, opts=invoke).labels or {}
        if all(labels.get(k) == v for k, v in SYSTEM_PLACEMENT.node_selector.items()):
            return group
    wanted = ", ".join(f"{k}={v}" for k, v in SYSTEM_PLACEMENT.node_selector.items())
    raise AttachError(
        f"no node group of {cluster_name} is labelled {wanted} (found {sorted(names)}): pass system_node_group="
    )


def existing_outputs(
    *, cluster_name: str, region: str, system_node_group: str | None = None, provider: aws.Provider | None = None
) -> dict[str, Any]:
    """What a platform stack's outputs would say of an existing cluster, read from AWS: the cluster, its IAM OIDC
    provider (which must exist: IRSA needs it), its private subnets' zones and its system node group (labelled as the
    platform labels it, unless named)."""
    invoke = pulumi.InvokeOptions(provider=provider)
    cluster = aws.eks.get_cluster(name=cluster_name, opts=invoke)
    issuer = cluster.identities[0].oidcs[0].issuer
    oidc = aws.iam.get_open_id_connect_provider(url=issuer, opts=invoke)
    subnets = [aws.ec2.get_subnet(id=subnet, opts=invoke) for subnet in sorted(cluster.vpc_config.subnet_ids)]
    private = [subnet for subnet in subnets if not subnet.map_public_ip_on_launch]
    return {
        "clusterName": cluster_name,
        "region": region,
        "kubernetesVersion": cluster.version,
        "clusterEndpoint": cluster.endpoint,
        "clusterCertificateAuthority": cluster.certificate_authorities[0].data,
        "oidcIssuer": issuer,
        "oidcProviderArn": oidc.arn,
        "clusterSecurityGroupId": cluster.vpc_config.cluster_security_group_id,
        "vpcId": cluster.vpc_config.vpc_id,
        "privateSubnetIds": [subnet.id for subnet in private],
        "availabilityZones": sorted({subnet.availability_zone for subnet in private}),
        "systemNodeGroup": system_node_group or _system_node_group(cluster_name, invoke),
    }
