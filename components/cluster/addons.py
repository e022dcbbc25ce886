"""The cluster's managed EKS add-ons, each pinned for the cluster's Kubernetes version, and their IRSA roles."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_aws as aws
import pulumi_eks as eks

from .. import versions
from ..identity.roles import PodIdentityTarget, WorkloadRole, WorkloadRoleArgs, aws_managed_policy_arn
from ..scheduling import Placement
from .capacity import METRICS_SERVER_REPLICAS

#: vpc-cni add-on configuration (its schema: `aws eks describe-addon-configuration --addon-name vpc-cni`).
VPC_CNI_CONFIGURATION: Mapping[str, str] = {"enableNetworkPolicy": "true"}

#: Service accounts the EKS add-ons run as: the IRSA trust policies must name exactly these.
VPC_CNI_SERVICE_ACCOUNT = ("kube-system", "aws-node")
EBS_CSI_SERVICE_ACCOUNT = ("kube-system", "ebs-csi-controller-sa")

#: eks-node-monitoring-agent add-on configuration (keys of its configuration schema: aws/eks-node-monitoring-agent
#: charts/configuration.schema.json). Its agent DaemonSet tolerates every taint already (nodeAgent.tolerations
#: `operator: Exists`); its DCGM host engine DaemonSet (`dcgm-server`, on NVIDIA instance types only, by affinity)
#: tolerates none by default, so on the tainted GPU pools the agent would run without DCGM's diagnostics. The model's
#: facts (tools/cluster_model/data/eks_addons.json) declare the same tolerations.
NODE_MONITORING_CONFIGURATION: Mapping[str, Any] = {"dcgmAgent": {"tolerations": [{"operator": "Exists"}]}}


#: The community add-on that serves the resource metrics API (`metrics.k8s.io`), which HPAs on CPU or memory (KServe's
#: default, istiod's and the gateway's) and `kubectl top` read.
METRICS_SERVER = "metrics-server"


def metrics_server_configuration(placement: Placement) -> dict[str, Any]:
    """The metrics-server add-on's configuration: its pods on the system nodes, `METRICS_SERVER_REPLICAS` of them.
    The keys are the upstream chart's (kubernetes-sigs/metrics-server charts/metrics-server/values.yaml: `replicas`,
    `nodeSelector`, `tolerations`), which the add-on's configuration schema takes
    (`aws eks describe-addon-configuration --addon-name metrics-server`). The model reads them back from the
    add-on's inputs (tools/cluster_model/platform.py)."""
    return {"replicas": METRICS_SERVER_REPLICAS, **placement.values()}


#: The add-on that serves EKS Pod Identity credentials on every node.
POD_IDENTITY_AGENT = "eks-pod-identity-agent"


@dataclass(frozen=True)
class AddonSite:
    """What every managed add-on and add-on role of the cluster shares."""

    #: The component's name, which theirs derive from, and the component they are children of.
    name: str
    parent: pulumi.Resource
    cluster: eks.Cluster
    #: The name of the aws.eks.Cluster inside pulumi-eks's component (see components.cluster.component.Cluster).
    cluster_name: pulumi.Output[str]
    kubernetes_version: str
    partition: pulumi.Output[str]
    #: With EKS Pod Identity, the cluster as the place its roles are used in (`associate=False`: each add-on makes
    #: its own association); None: IRSA.
    pod_identity: PodIdentityTarget | None = None


def addon_role(site: AddonSite, key: str, service_account: tuple[str, str], policy: str) -> WorkloadRole:
    return WorkloadRole(
        f"{site.name}-{key}",
        WorkloadRoleArgs(
            oidc_provider_arn=site.cluster.oidc_provider_arn,
            oidc_issuer=site.cluster.oidc_issuer,
            namespace=service_account[0],
            service_account=service_account[1],
            managed_policy_arns={"aws-managed": aws_managed_policy_arn(site.partition, policy)},
            pod_identity=site.pod_identity,
        ),
        pulumi.ResourceOptions(parent=site.parent),
    )


def addon(
    site: AddonSite,
    addon_name: str,
    *,
    role: WorkloadRole | None = None,
    depends_on: Sequence[pulumi.Resource] = (),
    configuration: Mapping[str, Any] | None = None,
) -> aws.eks.Addon:
    """A managed add-on at its pinned version for the cluster's Kubernetes version. Its `role` is given to it the
    way the cluster's pods get credentials: as the service account's IRSA role, or as a Pod Identity association the
    add-on makes for its service account (and removes with itself)."""
    pin = versions.eks_addon(site.kubernetes_version, addon_name)
    pod_identity = role is not None and site.pod_identity is not None
    return aws.eks.Addon(
        f"{site.name}-{addon_name}",
        cluster_name=site.cluster_name,
        addon_name=addon_name,
        addon_version=pin.version,
        service_account_role_arn=role.arn if role is not None and not pod_identity else None,
        pod_identity_associations=(
            [aws.eks.AddonPodIdentityAssociationArgs(role_arn=role.arn, service_account=role.service_account)]
            if role is not None and pod_identity
            else None
        ),
        configuration_values=json.dumps(configuration, sort_keys=True) if configuration else None,
        resolve_conflicts_on_create="OVERWRITE",
        resolve_conflicts_on_update="OVERWRITE",
        opts=pulumi.ResourceOptions(
            parent=site.parent,
            depends_on=list(depends_on),
            # EKS removes add-ons with the cluster; deleting each first only adds a batch to destroy.
            deleted_with=site.cluster,
        ),
    )


def networking_addons(site: AddonSite) -> tuple[aws.eks.Addon, aws.eks.Addon]:
    """vpc-cni and kube-proxy: daemon sets, created before any node exists, so the first nodes come up with
    networking."""
    cni_role = addon_role(site, "vpc-cni", VPC_CNI_SERVICE_ACCOUNT, "AmazonEKS_CNI_Policy")
    # The network policy agent: without it NetworkPolicies are accepted and silently not enforced. Namespaces
    # with no policy stay open, so Prometheus keeps scraping across namespaces.
    vpc_cni = addon(site, "vpc-cni", role=cni_role, configuration=VPC_CNI_CONFIGURATION)
    return vpc_cni, addon(site, "kube-proxy")


def pod_identity_agent_addon(site: AddonSite) -> aws.eks.Addon:
    """The EKS Pod Identity agent, a DaemonSet on every node (it tolerates every taint) that hands pods the
    credentials of their service account's association. Like the networking add-ons it needs no node to become
    ACTIVE, and the nodes' role already allows what it calls (`eks-auth:AssumeRoleForPodIdentity`, in
    AmazonEKSWorkerNodePolicy: EKS User Guide, pod-id-agent-setup.html)."""
    return addon(site, POD_IDENTITY_AGENT)


def node_health_addon(site: AddonSite) -> aws.eks.Addon:
    """The EKS node monitoring agent, a DaemonSet on every node: it turns kernel, network, storage, runtime and GPU
    faults (XIDs, DCGM diagnostics) into node conditions, which Karpenter's node repair replaces nodes on. Like the
    networking add-ons it needs no node to become ACTIVE."""
    return addon(site, "eks-node-monitoring-agent", configuration=NODE_MONITORING_CONFIGURATION)


def metrics_server_addon(site: AddonSite, nodes: pulumi.Resource, placement: Placement) -> aws.eks.Addon:
    """metrics-server: a Deployment, like CoreDNS, that needs a node to run on (else the add-on sits DEGRADED). The
    API server calls it through its APIService on the add-on's port (10251: EKS User Guide, metrics-server.html),
    and it calls every kubelet on 10250; kube-system has no NetworkPolicy and the cluster security group admits
    both (the nodes share it with the control plane)."""
    return addon(site, METRICS_SERVER, depends_on=[nodes], configuration=metrics_server_configuration(placement))


def workload_addons(site: AddonSite, nodes: pulumi.Resource) -> tuple[aws.eks.Addon, aws.eks.Addon]:
    """CoreDNS and the EBS CSI driver: deployments, whose pods need a node to run on, or the add-on sits DEGRADED
    until it times out."""
    ebs_role = addon_role(site, "ebs-csi", EBS_CSI_SERVICE_ACCOUNT, "service-role/AmazonEBSCSIDriverPolicy")
    coredns = addon(site, "coredns", depends_on=[nodes])
    return coredns, addon(site, "aws-ebs-csi-driver", role=ebs_role, depends_on=[nodes])
