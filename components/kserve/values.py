"""What the platform sets on KServe's charts, and the objects that keep its controller available (pure: plain dicts).

Keys and names as the pinned chart reads and renders them (kserve/kserve v0.16.0, charts/kserve-resources:
values.yaml, templates/deployment.yaml, templates/configmap.yaml).
"""

from __future__ import annotations

from typing import Any

from ..cluster.capacity import KSERVE_REPLICAS
from ..scheduling import Placement

#: The namespace the platform installs KServe into (its own: Kubeflow's namespaces carry upstream's network policies).
NAMESPACE = "kserve"
#: The controller's Deployment and the label its pods and Services select it by (templates/deployment.yaml).
CONTROLLER = "kserve-controller-manager"
CONTROLLER_LABELS = {"control-plane": CONTROLLER}
#: Standard mode: an InferenceService becomes a Deployment, a Service and an HPA, with no Knative (the chart's
#: `kserve.controller.deploymentMode` is "Standard" or "Knative"; its default, Knative, needs Knative Serving).
DEPLOYMENT_MODE = "Standard"
#: The controller backs fail-closed webhooks for InferenceServices and their pods: while none of its pods runs, no
#: InferenceService pod is created (a rescheduled replica included). The chart has no replica setting, so an HPA
#: holds it at two (the HPA raises a target below minReplicas before it reads any metric).
CONTROLLER_REPLICAS = KSERVE_REPLICAS


def chart_values(*, placement: Placement) -> dict[str, Any]:
    """Values for the pinned `kserve` chart: Standard mode, the controller on the system nodes, its replicas on
    different nodes where they can be, and no Ingress per InferenceService (the chart's default class, istio, has
    no IngressClass here; InferenceServices are reached through their Services, or a load balancer a team adds)."""
    return {
        "kserve": {
            "controller": {
                "deploymentMode": DEPLOYMENT_MODE,
                **placement.values(),
                "topologySpreadConstraints": [
                    {
                        "maxSkew": 1,
                        "topologyKey": "kubernetes.io/hostname",
                        "whenUnsatisfiable": "ScheduleAnyway",
                        "labelSelector": {"matchLabels": dict(CONTROLLER_LABELS)},
                    }
                ],
                "gateway": {"disableIngressCreation": True},
            }
        }
    }


def controller_availability(namespace: str = NAMESPACE) -> list[dict[str, Any]]:
    """The HPA that holds the controller at `CONTROLLER_REPLICAS` and the budget that keeps one serving while a
    system node drains."""
    return [
        {
            "apiVersion": "autoscaling/v2",
            "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": CONTROLLER, "namespace": namespace},
            "spec": {
                "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": CONTROLLER},
                "minReplicas": CONTROLLER_REPLICAS,
                "maxReplicas": CONTROLLER_REPLICAS,
            },
        },
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": CONTROLLER, "namespace": namespace},
            "spec": {"maxUnavailable": 1, "selector": {"matchLabels": dict(CONTROLLER_LABELS)}},
        },
    ]
