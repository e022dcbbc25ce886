"""What already exists in the account a program runs against under mocks: EKS clusters another stack (or another
tool) created, and the stacks a program references. The mocks answer reads and data sources about these from here,
and fail loudly on anything else."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

from ... import versions

ACCOUNT_ID = "123456789012"
#: How a secret value of a recorded stack output is shown (as `mocks.REDACTED`).
REDACTED = "[secret]"
#: What the mocks answer a read (`Resource.get`) of, with the state property that holds the name in its id.
READABLE = {"aws:eks/nodeGroup:NodeGroup": "nodeGroupName", "aws:eks/addon:Addon": "addonName"}
#: The node group an existing cluster's system nodes are in, labelled as the platform labels them.
SYSTEM_GROUP = "system"
SYSTEM_LABELS = {"eksml.io/node-role": "system"}


class UnknownToAccount(Exception):
    """The program asked about something the account does not have."""


def short_hex(*parts: str, length: int = 17) -> str:
    return hashlib.sha256("/".join(parts).encode()).hexdigest()[:length]


def issuer_host(cluster_name: str, region: str) -> str:
    """The OIDC issuer (without scheme) of a cluster: the same stand-in for a created and an existing one."""
    return f"oidc.eks.{region}.amazonaws.com/id/{short_hex(cluster_name, length=32).upper()}"


def endpoint(cluster_name: str, region: str) -> str:
    return f"https://{short_hex(cluster_name, length=32).upper()}.gr7.{region}.eks.amazonaws.com"


def cluster_security_group(cluster_name: str) -> str:
    return "sg-" + short_hex(cluster_name, "cluster-sg")


class ExistingAccount:
    """Existing clusters (name -> tags) and recorded stack outputs (`org/project/stack` -> outputs)."""

    def __init__(
        self,
        region: str,
        partition: str,
        clusters: Mapping[str, Mapping[str, str]],
        stack_references: Mapping[str, Mapping[str, Any]],
    ):
        self.region = region
        self.partition = partition
        self.clusters = {name: dict(tags) for name, tags in clusters.items()}
        self.stack_references = {name: dict(outputs) for name, outputs in stack_references.items()}

    def stack_reference(self, stack: str) -> tuple[str, dict[str, Any]]:
        """A StackReference is read under the referenced stack's name: answered from its recorded outputs."""
        if stack not in self.stack_references:
            raise UnknownToAccount(
                f"no recorded outputs for the stack reference {stack!r} (known: {sorted(self.stack_references)}); "
                "record them and pass them as stack_references (`--stack-reference NAME=FILE` in the preview)"
            )
        outputs = self.stack_references[stack]
        secret = sorted(key for key, value in outputs.items() if value == REDACTED)
        return stack, {"name": stack, "outputs": outputs, "secretOutputNames": secret}

    def has_cluster(self, cluster_name: str) -> bool:
        """An existing cluster, or one a referenced stack created."""
        return cluster_name in self.clusters or any(
            outputs.get("clusterName") == cluster_name for outputs in self.stack_references.values()
        )

    def read(self, type_: str, resource_id: str) -> dict[str, Any]:
        """The state of an EKS node group or add-on read by its id `<cluster>:<name>`."""
        cluster_name, _, name = resource_id.partition(":")
        if type_ not in READABLE or not self.has_cluster(cluster_name):
            raise UnknownToAccount(f"the mocks do not answer a read of {type_} {resource_id!r}")
        kind = type_.rsplit(":", 1)[-1].lower()
        arn = f"arn:{self.partition}:eks:{self.region}:{ACCOUNT_ID}:{kind}/{cluster_name}/{name}"
        return {"clusterName": cluster_name, READABLE[type_]: name, "arn": arn}

    def subnets(self, cluster_name: str) -> dict[str, str]:
        """The private subnet of each of three AZs an existing cluster was given: id -> AZ."""
        return {"subnet-" + short_hex(cluster_name, zone): f"{self.region}{zone}" for zone in "abc"}

    def describe_cluster(self, cluster_name: str) -> dict[str, Any]:
        """An existing cluster as aws.eks.getCluster describes it."""
        return {
            "name": cluster_name,
            "id": cluster_name,
            "arn": f"arn:{self.partition}:eks:{self.region}:{ACCOUNT_ID}:cluster/{cluster_name}",
            "version": versions.DEFAULT_KUBERNETES_VERSION,
            "endpoint": endpoint(cluster_name, self.region),
            "certificateAuthorities": [{"data": "Q0E="}],
            "identities": [{"oidcs": [{"issuer": f"https://{issuer_host(cluster_name, self.region)}"}]}],
            "vpcConfig": {
                "clusterSecurityGroupId": cluster_security_group(cluster_name),
                "vpcId": "vpc-" + short_hex(cluster_name, "vpc"),
                "subnetIds": sorted(self.subnets(cluster_name)),
                "endpointPrivateAccess": True,
                "endpointPublicAccess": False,
            },
            "status": "ACTIVE",
            "tags": dict(self.clusters[cluster_name]),
        }

    def call(self, token: str, args: Mapping[str, Any]) -> dict[str, Any] | None:
        """The data sources about existing clusters: the cluster, its OIDC provider, subnets and node groups. None
        for a token this does not answer."""
        if token == "aws:eks/getCluster:getCluster" and args.get("name") in self.clusters:
            return self.describe_cluster(args["name"])
        if token == "aws:iam/getOpenIdConnectProvider:getOpenIdConnectProvider":
            url = str(args.get("url", "")).removeprefix("https://")
            if not any(url == issuer_host(name, self.region) for name in self.clusters):
                raise UnknownToAccount(f"no IAM OIDC provider for {args.get('url')!r}: the issuer is not registered")
            arn = f"arn:{self.partition}:iam::{ACCOUNT_ID}:oidc-provider/{url}"
            return {"arn": arn, "id": arn, "url": url, "clientIdLists": ["sts.amazonaws.com"]}
        if token == "aws:ec2/getSubnet:getSubnet":
            for name in self.clusters:
                if (zone := self.subnets(name).get(args.get("id", ""))) is not None:
                    return {"id": args["id"], "availabilityZone": zone, "mapPublicIpOnLaunch": False}
            raise UnknownToAccount(f"no subnet {args.get('id')!r} in the account")
        cluster_name = args.get("clusterName")
        if token == "aws:eks/getNodeGroups:getNodeGroups" and cluster_name in self.clusters:
            return {"clusterName": cluster_name, "id": cluster_name, "names": [SYSTEM_GROUP]}
        if token == "aws:eks/getNodeGroup:getNodeGroup" and cluster_name in self.clusters:
            if args.get("nodeGroupName") != SYSTEM_GROUP:
                raise UnknownToAccount(f"no node group {args.get('nodeGroupName')!r} in {cluster_name}")
            return {
                "clusterName": cluster_name,
                "nodeGroupName": SYSTEM_GROUP,
                "labels": dict(SYSTEM_LABELS),
                "id": SYSTEM_GROUP,
            }
        return None
