"""Values of the pinned Kueue chart (pure).

Which workloads queue: Jobs, JobSets, Kubeflow Trainer's TrainJobs and single pods (the `pod` integration: a
notebook's pod, labelled through a PodDefault). Only those that carry the queue label, and only in team namespaces:
`manageJobsWithoutQueueName` stays false, so the platform's own Jobs and a team's CPU work run as before, and the
team's ResourceQuota still caps every GPU pod, queued or not.
"""

from __future__ import annotations

from typing import Any

import yaml

from ..cluster.capacity import KUEUE as REQUESTS
from ..cluster.capacity import KUEUE_REPLICAS
from ..scheduling import EFA_RESOURCE, NEURON_RESOURCE, Placement
from ..versions import KUEUE_IMAGE
from .queues import MANAGED_NAMESPACE_LABEL, MANAGED_NAMESPACE_VALUE

NAMESPACE = "kueue-system"
#: Kueue's integrations this platform queues (the `integrations.frameworks` names of the pinned release).
FRAMEWORKS = ("batch/job", "jobset.x-k8s.io/jobset", "trainer.kubeflow.org/trainjob", "pod")
#: Resources Kueue leaves to the namespace's ResourceQuota: it arbitrates GPUs only. A workload asking for a resource
#: its ClusterQueue's resourceGroups do not cover finds no flavor for it and is never admitted, so each resource a
#: queued workload may ask for is either covered or listed here.
#: EFA interfaces (`vpc.amazonaws.com/efa`, advertised by the EFA device plugin) are left out on purpose: they come
#: with the GPU node (a p5.48xlarge has 32 beside its 8 GPUs) and only a pod on that node can take them, so the GPUs
#: a team is admitted already bound the interfaces it can use; counting them would need a quota per team that only
#: restates its GPUs, and without either a training job that asks for them (docs/gpu.md) waits forever.
#: Neuron devices and cores (every name the Neuron device plugin has used starts with `aws.amazon.com/neuron`) are
#: left out too: the shared flavor is the NVIDIA pools, and no team has a Neuron quota for Kueue to hold it to; a
#: team's Neuron pods are capped by its namespace's ResourceQuota instead (`queues.neuron_ceilings`: what the team's
#: own Neuron pool runs, none on the platform's pools). Covered by no resource group and not excluded, a queued job
#: asking for Neuron would never be admitted.
EXCLUDED_RESOURCE_PREFIXES = ("cpu", "memory", "ephemeral-storage", "pods", "hugepages-", EFA_RESOURCE, NEURON_RESOURCE)
#: How long an admitted workload's pods have to all be Ready before Kueue evicts it and puts it back in the queue,
#: freeing its quota: a new GPU node (Karpenter's launch, the GPU Operator's driver validation) and a multi-GB
#: CUDA image pull take their time, so this is far past a normal start and catches only what cannot start
#: (pods refused, an instance type out of capacity for good).
PODS_READY_TIMEOUT = "30m"


def manager_config() -> dict[str, Any]:
    """Kueue's Configuration (config.kueue.x-k8s.io/v1beta2), as the chart's `controllerManagerConfigYaml` holds it:
    the chart's defaults for the manager, with the platform's choices of what is queued and where."""
    return {
        "apiVersion": "config.kueue.x-k8s.io/v1beta2",
        "kind": "Configuration",
        "health": {"healthProbeBindAddress": ":8081"},
        "metrics": {"bindAddress": ":8443"},
        "webhook": {"port": 9443},
        "leaderElection": {"leaderElect": True, "resourceName": "c1f6bfd2.kueue.x-k8s.io"},
        # How many objects of each kind the manager reconciles at once, and how fast it may call the API server: the
        # chart's defaults too (without them each controller reconciles one object at a time).
        "controller": {
            "groupKindConcurrency": {
                "Job.batch": 5,
                "Pod": 5,
                "Workload.kueue.x-k8s.io": 10,
                "LocalQueue.kueue.x-k8s.io": 5,
                "ClusterQueue.kueue.x-k8s.io": 5,
                "ResourceFlavor.kueue.x-k8s.io": 1,
            }
        },
        "clientConnection": {"qps": 300, "burst": 500},
        "manageJobsWithoutQueueName": False,
        # The chart gives every mutating and validating webhook this selector: outside team namespaces no request
        # waits on Kueue (its webhooks fail closed).
        "managedJobsNamespaceSelector": {"matchLabels": {MANAGED_NAMESPACE_LABEL: MANAGED_NAMESPACE_VALUE}},
        "integrations": {"frameworks": list(FRAMEWORKS)},
        "resources": {"excludeResourcePrefixes": list(EXCLUDED_RESOURCE_PREFIXES)},
        "waitForPodsReady": wait_for_pods_ready(),
    }


def wait_for_pods_ready() -> dict[str, Any]:
    """Kueue's all-or-nothing start (Configuration v1beta2 `waitForPodsReady`, kueue v0.19.2
    apis/config/v1beta2/configuration_types.go: present means on). A workload admitted by borrowing whose pods never
    start would otherwise hold its quota, and the cohort's, for good.

    - `timeout`: `PODS_READY_TIMEOUT` after admission, unready pods evict the workload and requeue it;
    - `blockAdmission: false`: other workloads are admitted meanwhile. True admits one workload at a time
      cluster-wide until its pods are Ready: with every team in one cohort, one team's slow start would hold all
      of them;
    - `requeuingStrategy`: requeued by its eviction time (behind what waited meanwhile), after a back-off from 60s
      doubling up to 30 min, and deactivated after 5 evictions (it then needs `spec.active: true` to queue again);
    - no `recoveryTimeout`: a running workload whose pod fails is left to its own restart policy."""
    return {
        "timeout": PODS_READY_TIMEOUT,
        "blockAdmission": False,
        "requeuingStrategy": {
            "timestamp": "Eviction",
            "backoffBaseSeconds": 60,
            "backoffMaxSeconds": 1800,
            "backoffLimitCount": 5,
        },
    }


def chart_values(*, placement: Placement) -> dict[str, Any]:
    """The controller on the system nodes with the requests the system node sizing counts (two replicas and a
    disruption budget: its webhooks fail closed in team namespaces), the release's image, and the manager
    configuration above."""
    on_system_nodes = placement.values()
    return {
        "controllerManager": {
            "manager": {
                "image": {
                    "repository": KUEUE_IMAGE.name,
                    # <tag>@<digest> once a digest is pinned: the manager template joins repository:tag.
                    "tag": KUEUE_IMAGE.image_tag,
                    "pullPolicy": "IfNotPresent",
                },
                "resources": {
                    "requests": {"cpu": f"{REQUESTS.cpu_m}m", "memory": f"{REQUESTS.memory_mi}Mi"},
                    "limits": {"memory": f"{REQUESTS.memory_mi}Mi"},
                },
            },
            "replicas": KUEUE_REPLICAS,
            "podDisruptionBudget": {"enabled": True, "minAvailable": 1},
            **on_system_nodes,
        },
        # A pod's labels may come from Kubeflow's PodDefault webhook after Kueue's has run: run Kueue's again then.
        "mutatingWebhook": {"reinvocationPolicy": "IfNeeded"},
        "managerConfig": {"controllerManagerConfigYaml": yaml.safe_dump(manager_config(), sort_keys=True)},
    }
