"""Observability: kube-prometheus-stack, scraping of DCGM and Karpenter, GPU dashboards and alerts, and
prometheus-adapter serving GPU utilisation to HPAs."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from types import MappingProxyType
from typing import Any

import pulumi
import pulumi_random as random

from .. import helm, k8s_objects, versions
from ..cluster import capacity as system_capacity
from ..cluster.create_order import created_after
from ..cluster.handle import ClusterHandle
from ..scheduling import Placement
from . import network_policy
from .adapter import PROMETHEUS_PORT, adapter_values, prometheus_url
from .config import ObservabilityConfig
from .cost import cost_rules, ksm_label_allowlist
from .render import (
    DASHBOARDS,
    GpuPool,
    alert_rules,
    dashboard_configmap,
    karpenter_service_monitor,
)

NAMESPACE = "monitoring"
#: node-exporter reads the host's network, PIDs and file systems, so its namespace enforces `privileged`; it is the
#: only pod there, and `monitoring` enforces `restricted`.
NODE_EXPORTER_NAMESPACE = "node-exporter"
GRAFANA_SECRET = "grafana-admin"


def stack_values(
    config: ObservabilityConfig,
    *,
    storage_class: str,
    delete_volumes: bool,
    placement: Placement,
    webhook_url: pulumi.Input[str] | None,
) -> dict[str, Any]:
    """Values for kube-prometheus-stack (keys of its values.yaml at the pinned version)."""
    on_system_nodes = placement.values()
    values: dict[str, Any] = {
        # Helm never upgrades the crds/ folder; the chart's pre-upgrade job applies the new CRDs on a version bump.
        "crds": {
            "upgradeJob": {
                "enabled": True,
                # The digest rides in the tag: the job's template adds `busybox.sha` only when `upgradeJob.image.sha`
                # is set, a key chart 88.5.3's values do not declare, and otherwise joins registry/repository:tag, so
                # this renders docker.io/busybox:<tag>@sha256:<digest> (name:tag@digest, pulled by digest).
                "image": {"busybox": {"tag": versions.BUSYBOX.image_tag}},
                **on_system_nodes,
            }
        },
        # EKS runs these on its own control plane and exposes no metrics for them: monitors would find no target
        # and KubeControllerManagerDown / KubeSchedulerDown (critical) would fire forever.
        "kubeControllerManager": {"enabled": False},
        "kubeScheduler": {"enabled": False},
        "kubeEtcd": {"enabled": False},
        # The EKS kube-proxy add-on's metrics bind address is the add-on's, not ours to check or change: a monitor
        # that cannot reach it would page with KubeProxyDown.
        "kubeProxy": {"enabled": False},
        "prometheus": {
            "prometheusSpec": {
                # Select monitors and rules from every namespace, whatever their labels: the GPU Operator's DCGM
                # ServiceMonitor and ours carry no Helm release label.
                "serviceMonitorSelectorNilUsesHelmValues": False,
                "podMonitorSelectorNilUsesHelmValues": False,
                "ruleSelectorNilUsesHelmValues": False,
                "probeSelectorNilUsesHelmValues": False,
                "scrapeConfigSelectorNilUsesHelmValues": False,
                "retention": config.retention,
                "storageSpec": {
                    "volumeClaimTemplate": {
                        "spec": {
                            "storageClassName": storage_class,
                            "accessModes": ["ReadWriteOnce"],
                            "resources": {"requests": {"storage": f"{config.storage_gib}Gi"}},
                        }
                    }
                },
                # Helm never deletes a StatefulSet's claims; this makes Prometheus' volume go with it (dev).
                "persistentVolumeClaimRetentionPolicy": {
                    "whenDeleted": "Delete" if delete_volumes else "Retain",
                    "whenScaled": "Retain",
                },
                "resources": {
                    "requests": dict(system_capacity.quantity(system_capacity.PROMETHEUS)),
                    "limits": {"memory": f"{system_capacity.PROMETHEUS_MEMORY_LIMIT_MI}Mi"},
                },
                **on_system_nodes,
            },
            # The chart's default port, set from the constant the adapter's values read, so both ends agree.
            "service": {"port": PROMETHEUS_PORT},
        },
        # The chart sizes none of the pods below; the system node sizing counts what these values ask
        # (cluster.capacity.OBSERVABILITY_WORKLOADS).
        "prometheusOperator": {
            "resources": system_capacity.PROMETHEUS_OPERATOR.values(),
            **on_system_nodes,
            "admissionWebhooks": {"patch": {**on_system_nodes}},
        },
        "alertmanager": {"alertmanagerSpec": {"resources": system_capacity.ALERTMANAGER.values(), **on_system_nodes}},
        # No `secrets` collector: its metrics (names, types, labels of every Secret) feed no rule or dashboard here, and
        # the chart grants its ClusterRole `list` and `watch` on every Secret only for that collector.
        "kube-state-metrics": {
            "collectorsExclude": ["secrets"],
            # The node labels the GPU cost rules join on (pool, capacity type, instance type); KSM exposes none
            # unless named here.
            "metricLabelsAllowlist": ksm_label_allowlist(),
            "resources": system_capacity.KUBE_STATE_METRICS.values(),
            **on_system_nodes,
        },
        # In a namespace of its own (privileged: host network, PIDs and paths); Prometheus finds its monitor there,
        # as it selects monitors in every namespace.
        "prometheus-node-exporter": {
            "namespaceOverride": NODE_EXPORTER_NAMESPACE,
            "resources": system_capacity.NODE_EXPORTER.values(),
        },
        "grafana": {
            "resources": system_capacity.GRAFANA.values(),
            # A Role in this namespace instead of a ClusterRole: the sidecars load dashboards and datasources only
            # from here, where the platform puts its own (the chart's ClusterRole would read every Secret).
            "rbac": {"namespaced": True},
            # The password is generated by the stack and read from a Secret; the chart default is never used.
            "admin": {"existingSecret": GRAFANA_SECRET, "userKey": "admin-user", "passwordKey": "admin-password"},
            "sidecar": {
                # Both sidecars (dashboards and datasources) take these.
                "resources": system_capacity.GRAFANA_SIDECAR.values(),
                "dashboards": {
                    "enabled": True,
                    "label": "grafana_dashboard",
                    "labelValue": "1",
                    # Only this namespace, the one the Role covers (the chart's default is every namespace).
                    "searchNamespace": NAMESPACE,
                },
            },
            **on_system_nodes,
        },
    }
    if webhook_url is not None:
        values["alertmanager"]["config"] = {
            "route": {"receiver": "default"},
            # "null" stays: the chart's default routes send Watchdog and InfoInhibitor there.
            "receivers": [
                {"name": "null"},
                {"name": "default", "webhook_configs": [{"url": webhook_url, "send_resolved": True}]},
            ],
        }
    return values


@dataclass(frozen=True)
class ObservabilityArgs:
    """Prometheus, Alertmanager and Grafana on a cluster. Fields without a default are required."""

    #: The cluster to install into: `Cluster.handle`, or `ClusterHandle.from_stack_reference` / `from_existing`.
    cluster: ClusterHandle
    #: Retention, volume size, alert thresholds, the Alertmanager receiver, the metrics adapter
    #: (`ObservabilityConfig`).
    config: ObservabilityConfig
    #: NodePools with an accelerator ceiling: each gets its near-limit alert (`render.gpu_pools(node_pools)`).
    gpu_pools: tuple[GpuPool, ...]
    #: The StorageClass Prometheus' volume uses (`Storage.kept_volume_class`): Prometheus waits for it, and is removed
    #: first.
    storage_class: pulumi.Resource
    #: Its name (`Storage.kept_volume_class_name`).
    storage_class_name: str
    #: Whether `pulumi destroy` deletes Prometheus' volume (with StatefulResources.DESTROY) or leaves it.
    delete_volumes: bool
    #: USD per GPU-hour by NVIDIA instance type, for the GPU cost rules (`PlatformConfig.gpu_hour_prices`, or
    #: `components.instances.prices.gpu_hour_prices(region)`). Default: none, and the rules record GPU-hours per
    #: namespace and pool without pricing them.
    gpu_hour_prices: Mapping[str, Decimal] = field(default_factory=lambda: MappingProxyType({}))
    #: How many times the device plugin advertises each GPU (`GpuConfig.time_slicing_replicas`), so the cost rules
    #: count a pod's `nvidia.com/gpu` as that share of a GPU. Default: 1, GPUs not shared.
    gpu_shares: int = 1
    #: GPUs per NVIDIA instance type (`PlatformConfig.instance_gpus`), for the cost rules' count of the GPUs the pools
    #: ran and the unallocated ones. Default: none, and those are not recorded.
    instance_gpus: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))
    #: Where Karpenter's controller runs, for its ServiceMonitor. Default: `kube-system`, where `Karpenter` puts it.
    karpenter_namespace: str = "kube-system"
    #: Controllers that delete the AWS side of namespaced objects (`Ingress.controller`); the namespace is deleted
    #: while they run. Default: none.
    cleanup_controllers: tuple[pulumi.Resource, ...] = ()


class Observability(pulumi.ComponentResource):
    """Prometheus, Alertmanager and Grafana with the platform's dashboards and alerts, and the custom metrics API."""

    grafana_admin_password: pulumi.Output[str]
    #: kube-prometheus-stack, whose CRDs define ServiceMonitors and PodMonitors (other parts' monitors wait for it).
    release: pulumi.Resource
    #: prometheus-adapter (None when observability.metricsAdapter.enabled is false).
    metrics_adapter: pulumi.Resource | None

    def __init__(self, name: str, args: ObservabilityArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("eksml:observability:Observability", name, None, opts)
        cluster, config = args.cluster, args.config
        k8s_opts = cluster.kubernetes_options(self)
        namespace = cluster.owned_namespace(
            f"{name}-namespace",
            NAMESPACE,
            parent=self,
            pod_security="restricted",  # node-exporter, the one host agent, runs in its own namespace
            cleanup_controllers=args.cleanup_controllers,  # Prometheus' claim among what lives here
        )
        node_exporter_namespace = cluster.owned_namespace(
            f"{name}-node-exporter-namespace",
            NODE_EXPORTER_NAMESPACE,
            parent=self,
            pod_security="privileged",
            cleanup_controllers=args.cleanup_controllers,
        )
        in_namespace = pulumi.ResourceOptions.merge(k8s_opts, pulumi.ResourceOptions(depends_on=[namespace]))
        policies = {
            **network_policy.monitoring_policies(NAMESPACE, metrics_adapter=config.metrics_adapter.enabled),
            **{
                f"node-exporter-{key}": manifest
                for key, manifest in network_policy.node_exporter_policies(NODE_EXPORTER_NAMESPACE).items()
            },
        }
        for key, manifest in policies.items():
            # The node exporter's go in its own namespace: they wait for it.
            owner = node_exporter_namespace if key.startswith("node-exporter-") else namespace
            k8s_objects.create(
                f"{name}-netpol-{key}",
                manifest,
                pulumi.ResourceOptions.merge(k8s_opts, pulumi.ResourceOptions(depends_on=[owner])),
            )
        password = random.RandomPassword(
            f"{name}-grafana-admin", length=32, special=False, opts=pulumi.ResourceOptions(parent=self)
        )
        self.grafana_admin_password = pulumi.Output.secret(password.result)
        secret = k8s_objects.create(
            f"{name}-grafana-admin",
            {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {"name": GRAFANA_SECRET, "namespace": NAMESPACE},
                "type": "Opaque",
                "stringData": {"admin-user": "admin", "admin-password": self.grafana_admin_password},
            },
            in_namespace,
        )
        webhook = config.alertmanager.webhook_url
        release = helm.release(
            name,
            versions.KUBE_PROMETHEUS_STACK,
            namespace=NAMESPACE,
            values=stack_values(
                config,
                storage_class=args.storage_class_name,
                delete_volumes=args.delete_volumes,
                placement=cluster.system_placement,
                webhook_url=pulumi.Output.secret(webhook) if webhook else None,
            ),
            timeout_seconds=900,
            opts=pulumi.ResourceOptions.merge(
                in_namespace,
                # why: Grafana reads the Secret, Prometheus' volume needs the class, node-exporter goes into its
                # namespace, all of it runs on the system nodes; destroy removes the release before each of them.
                pulumi.ResourceOptions(
                    depends_on=[secret, args.storage_class, node_exporter_namespace, *cluster.system_ready],
                    # Nothing of it is in AWS but Prometheus' claim, which lives in the namespace: the namespace's
                    # delete takes the claim (its class decides the volume) and the rest, so no uninstall of its own.
                    deleted_with=namespace,
                ),
            ),
        )
        self.release = release
        self.metrics_adapter = None
        if config.metrics_adapter.enabled:
            # Uninstalled on its own (`helm.OWN_DELETE_CHARTS`), before its namespace's delete: it takes its
            # APIService with it, which would otherwise outlive its pods (stopped by the `monitoring` namespace's
            # delete) and hold every namespace Terminating; and Helm keeps the release's record in that namespace, so
            # an uninstall after the namespace's delete fails with "release: not found". It waits for Prometheus
            # through values (`created_after`), and for the cleanup controllers the namespaces wait for.
            self.metrics_adapter = helm.release(
                f"{name}-metrics-adapter",
                versions.PROMETHEUS_ADAPTER,
                namespace=created_after(NAMESPACE, namespace),
                values=adapter_values(
                    prometheus_url=created_after(
                        prometheus_url(versions.KUBE_PROMETHEUS_STACK.name, NAMESPACE), release
                    ),
                    placement=cluster.system_placement,
                ),
                opts=pulumi.ResourceOptions.merge(
                    k8s_opts,
                    # why: it runs on the system nodes in its namespace and resolves Prometheus through cluster DNS; on
                    # destroy it goes before its namespace (its release record is there) and the cleanup controllers.
                    pulumi.ResourceOptions(depends_on=[namespace, *cluster.system_ready, *args.cleanup_controllers]),
                ),
            )
        # why: monitors and rules are custom resources whose CRDs the release installs.
        after_crds = pulumi.ResourceOptions.merge(k8s_opts, pulumi.ResourceOptions(depends_on=[release]))
        k8s_objects.create(
            f"{name}-karpenter-monitor", karpenter_service_monitor(args.karpenter_namespace, NAMESPACE), after_crds
        )
        k8s_objects.create(
            f"{name}-alerts", alert_rules("eks-ml-platform", NAMESPACE, list(args.gpu_pools), config.alerts), after_crds
        )
        k8s_objects.create(
            f"{name}-cost-rules",
            cost_rules("gpu-cost", NAMESPACE, args.gpu_hour_prices, args.gpu_shares, args.instance_gpus),
            after_crds,
        )
        for dashboard in DASHBOARDS:
            k8s_objects.create(f"{name}-dashboard-{dashboard}", dashboard_configmap(dashboard, NAMESPACE), after_crds)
        self.register_outputs({"grafanaAdminPassword": self.grafana_admin_password})
