"""Pure renderers: typed NodePool / EC2NodeClass specs to Karpenter v1 objects (plain dicts, no resources)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .. import versions
from ..network.tags import DISCOVERY_TAG
from ..scheduling import EFA_LABEL, GPU_SHARE_LABEL, GPU_SHARE_PLATFORM, Taint
from .config import KarpenterConfig
from .specs import NodeClassSpec, NodePoolSpec
from .userdata import (
    FAST_IMAGE_PULL_GATE,
    al2023_user_data,
    bottlerocket_user_data,
    containerd_config,
)
from .validation import EXCLUDE, excludes

NODEPOOL_API = "karpenter.sh/v1"
NODECLASS_API = "karpenter.k8s.aws/v1"
POOL_LABEL = "eksml.io/node-pool"


@dataclass(frozen=True)
class NodeClassContext:
    """What every EC2NodeClass of a cluster shares."""

    cluster_name: str
    node_role_name: str
    tags: Mapping[str, str]


def _requirement(key: str, operator: str, values: Sequence[str] = (), min_values: int | None = None) -> dict[str, Any]:
    requirement: dict[str, Any] = {"key": key, "operator": operator}
    if values:
        requirement["values"] = list(values)
    if min_values is not None:
        requirement["minValues"] = min_values
    return requirement


def requirements(pool: NodePoolSpec) -> list[dict[str, Any]]:
    """The pool's typed fields as NodePool requirements, its extra requirements, then the exclusion of accelerators
    it is not for."""
    rendered = [
        _requirement("karpenter.sh/capacity-type", "In", pool.capacity_types),
        _requirement("kubernetes.io/arch", "In", pool.architectures),
        _requirement("kubernetes.io/os", "In", ["linux"]),
    ]
    typed = (
        ("karpenter.k8s.aws/instance-category", pool.instance_categories),
        ("karpenter.k8s.aws/instance-family", pool.instance_families),
        ("karpenter.k8s.aws/instance-size", pool.instance_sizes),
        ("karpenter.k8s.aws/instance-gpu-name", pool.gpu_names),
        ("topology.kubernetes.io/zone", pool.zones),
    )
    rendered += [_requirement(key, "In", values) for key, values in typed if values]
    if pool.generation_above is not None:
        rendered.append(_requirement("karpenter.k8s.aws/instance-generation", "Gt", [str(pool.generation_above)]))
    rendered += [_requirement(r.key, r.operator, r.values, r.min_values) for r in pool.requirements]
    # Keep out every accelerator the pool is not for: whatever its other requirements, a CPU pool then cannot launch
    # a GPU instance (untainted, outside every GPU limit) for a pending pod that tolerates the GPU taint.
    for accelerator, (key, operator) in EXCLUDE.items():
        if pool.accelerator != accelerator and not any(
            excludes(accelerator, r.key, r.operator) for r in pool.requirements
        ):
            rendered.append(_requirement(key, operator))
    return rendered


def render_nodepool(
    name: str, pool: NodePoolSpec, *, startup_taints: Sequence[Taint] = (), efa: bool = False, gpu_share: bool = False
) -> dict[str, Any]:
    """`efa`: the pool's node class attaches EFA interfaces (its nodes are labelled for the EFA device plugin).
    `gpu_share`: the pool is one of the platform's GPU pools every team shares (`KarpenterConfig.shared_gpu_pools`),
    labelled for Kueue's shared flavor; a team stack's own pool never is."""
    labels = {POOL_LABEL: name, **({EFA_LABEL: "true"} if efa else {}), **pool.labels}
    if gpu_share:
        labels[GPU_SHARE_LABEL] = GPU_SHARE_PLATFORM
    template_spec: dict[str, Any] = {
        "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": pool.node_class},
        "requirements": requirements(pool),
        "expireAfter": pool.expire_after,
    }
    if pool.taints:
        template_spec["taints"] = [t.taint.as_dict() for t in pool.taints]
    if startup_taints:
        template_spec["startupTaints"] = [t.as_dict() for t in startup_taints]
    template_spec["terminationGracePeriod"] = pool.termination_grace_period
    spec: dict[str, Any] = {
        "template": {
            "metadata": {"labels": labels},
            "spec": template_spec,
        },
        "limits": dict(pool.limits),
        # In full, Karpenter's defaults included, so what a pool does is read here rather than in Karpenter's docs.
        "disruption": pool.disruption.model_dump(mode="json", by_alias=True, exclude_none=True),
    }
    if pool.weight is not None:
        spec["weight"] = pool.weight
    return {"apiVersion": NODEPOOL_API, "kind": "NodePool", "metadata": {"name": name}, "spec": spec}


def render_nodepools(config: KarpenterConfig, startup_taints: Sequence[Taint] = ()) -> dict[str, dict[str, Any]]:
    """Every NodePool of the platform's config, by name: EFA pools labelled for their plugin, the GPU pools every team
    shares labelled for Kueue's shared flavor."""
    efa_pools, shared_gpu_pools = config.efa_pools(), config.shared_gpu_pools()
    return {
        name: render_nodepool(
            name, pool, startup_taints=startup_taints, efa=name in efa_pools, gpu_share=name in shared_gpu_pools
        )
        for name, pool in sorted(config.node_pools.items())
    }


def _ebs(size_gib: int, iops: int, throughput: int) -> dict[str, Any]:
    return {
        "volumeSize": f"{size_gib}Gi",
        "volumeType": "gp3",
        "iops": iops,
        "throughput": throughput,
        "encrypted": True,
        "deleteOnTermination": True,
    }


def user_data(node_class: NodeClassSpec) -> str | None:
    spec = node_class.user_data
    if spec is None:
        return None
    if node_class.ami_family == "bottlerocket":
        settings = dict(spec.settings or {})
        if spec.max_concurrent_downloads is not None:
            runtime = dict(settings.get("container-runtime") or {})
            settings["container-runtime"] = {**runtime, "max-concurrent-downloads": spec.max_concurrent_downloads}
        return bottlerocket_user_data(settings) if settings else None
    node_config = dict(spec.node_config or {})
    if spec.parallel_image_pull:
        node_config["featureGates"] = {**(node_config.get("featureGates") or {}), FAST_IMAGE_PULL_GATE: True}
    if spec.max_concurrent_downloads is not None:
        node_config["containerd"] = {
            **(node_config.get("containerd") or {}),
            "config": containerd_config(spec.max_concurrent_downloads),
        }
    return al2023_user_data(node_config) if node_config else None


def _terms(terms: Sequence[Any]) -> list[dict[str, Any]]:
    return [term.model_dump(mode="json", by_alias=True, exclude_none=True) for term in terms]


def render_nodeclass(name: str, node_class: NodeClassSpec, context: NodeClassContext) -> dict[str, Any]:
    discovery = {"tags": {DISCOVERY_TAG: context.cluster_name}}
    volume = _ebs(node_class.root_volume_gib, node_class.root_volume_iops, node_class.root_volume_throughput_mibps)
    if node_class.ami_family == "bottlerocket":
        # Bottlerocket keeps its OS on a small volume and images, logs and pod data on the second one.
        devices = [
            {"deviceName": "/dev/xvda", "ebs": _ebs(4, 3000, 125)},
            {"deviceName": "/dev/xvdb", "rootVolume": True, "ebs": volume},
        ]
        pin = versions.BOTTLEROCKET_AMI
    else:
        devices = [{"deviceName": "/dev/xvda", "rootVolume": True, "ebs": volume}]
        pin = versions.AL2023_AMI
    release = pin.version if node_class.ami_release == "pinned" else "latest"
    spec: dict[str, Any] = {
        "amiSelectorTerms": [{"alias": f"{pin.name}@{release}"}],
        "role": context.node_role_name,
        "subnetSelectorTerms": _terms(node_class.subnet_selector_terms) or [discovery],
        # Nodes always join the cluster security group: without it they reach neither the control plane nor the
        # system nodes. Other groups (a dedicated EFA group, say) come in addition.
        "securityGroupSelectorTerms": [discovery, *_terms(node_class.security_group_selector_terms)],
        "blockDeviceMappings": devices,
        "metadataOptions": {
            "httpEndpoint": "enabled",
            "httpProtocolIPv6": "disabled",
            "httpTokens": "required",
            "httpPutResponseHopLimit": node_class.imds_hop_limit,
        },
        "associatePublicIPAddress": False,
        "detailedMonitoring": node_class.detailed_monitoring,
        # The stack's standard tags win: cost allocation and the teardown sweep read them.
        "tags": {**node_class.tags, **context.tags},
    }
    if node_class.capacity_reservation_selector_terms:
        spec["capacityReservationSelectorTerms"] = _terms(node_class.capacity_reservation_selector_terms)
    if node_class.instance_store_policy is not None:
        spec["instanceStorePolicy"] = node_class.instance_store_policy
    if node_class.kubelet is not None and (
        kubelet := node_class.kubelet.model_dump(mode="json", by_alias=True, exclude_none=True)
    ):
        spec["kubelet"] = kubelet
    if (text := user_data(node_class)) is not None:
        spec["userData"] = text
    if interfaces := node_class.interfaces:
        spec["networkInterfaces"] = interfaces
    if node_class.placement_group_selector is not None:
        spec["placementGroupSelector"] = node_class.placement_group_selector.model_dump(mode="json", exclude_none=True)
    return {"apiVersion": NODECLASS_API, "kind": "EC2NodeClass", "metadata": {"name": name}, "spec": spec}
