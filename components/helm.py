"""The one place Helm releases are created: always an exact chart version from a named repository."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from . import k8s_objects
from .versions import ChartPin

#: Charts whose uninstall must run while the cluster does (their release is never `deleted_with` the cluster):
#: controllers that delete what they made in AWS, and an aggregated API that would outlive its backend. (A chart
#: whose data lives in a claim goes with the namespace the stack deletes, which takes the claim: `deleted_with` that
#: namespace.)
OWN_DELETE_CHARTS = frozenset(
    {
        "karpenter",  # terminates the instances and instance profiles it launched, while NodePools go
        "aws-load-balancer-controller",  # deletes the load balancers of Ingresses and LoadBalancer Services
        "aws-fsx-csi-driver",  # deletes the file systems of fsx-lustre claims
        # Registers an aggregated API (custom.metrics.k8s.io) from the `monitoring` namespace: once that namespace's
        # delete has stopped its pods, the APIService it leaves has no backend and no namespace can finish deleting
        # (kubernetes/kubernetes#75788). Uninstalled first, it takes its APIService with it.
        "prometheus-adapter",
    }
)


def release(
    name: str,
    chart: ChartPin,
    *,
    namespace: pulumi.Input[str],
    values: Mapping[str, Any],
    opts: pulumi.ResourceOptions,
    skip_crds: bool = False,
    create_namespace: bool = False,
    timeout_seconds: int = 600,
    disable_openapi_validation: bool = False,
) -> k8s.helm.v3.Release:
    """A Helm release of a pinned chart. The release name is `chart.name`, so in-cluster names stay stable. It goes
    with the cluster when `opts` say so (`ClusterHandle.kubernetes_options`), unless its chart cleans up in AWS.

    `disable_openapi_validation` is for charts whose CRD upgrade hook runs during the upgrade: their new custom
    resources would otherwise be validated against the old CRDs."""
    if chart.name in OWN_DELETE_CHARTS:
        opts = k8s_objects.own_delete(opts)
    oci = chart.repo.startswith("oci://")
    return k8s.helm.v3.Release(
        name,
        name=chart.name,
        chart=f"{chart.repo}/{chart.name}" if oci else chart.name,
        version=chart.version,
        repository_opts=None if oci else k8s.helm.v3.RepositoryOptsArgs(repo=chart.repo),
        namespace=namespace,
        create_namespace=create_namespace,
        values=dict(values),
        skip_crds=skip_crds,
        disable_openapi_validation=disable_openapi_validation,
        # Roll back a failed upgrade instead of leaving a half-applied release behind.
        atomic=True,
        cleanup_on_fail=True,
        timeout=timeout_seconds,
        opts=opts,
    )
