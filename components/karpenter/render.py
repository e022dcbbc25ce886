"""Pure renderers: typed NodePool / EC2NodeClass specs to Karpenter v1 objects (plain dicts, no resources)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from components import versions
from components.karpenter.specs import NodeClassSpec, NodePoolSpec
from components.karpenter.validation import EXCLUDE, excludes
from components.network.tags import DISCOVERY_TAG
from components.scheduling import Taint

NODEPOOL_API = "karpenter.sh/v1"
NODECLASS_API = "karpenter.k8s.aws/v1"
POOL_LABEL = "eksml.io/node-pool"


@dataclass(frozen=True)
class NodeClassContext:
    """What every EC2NodeClass of a cluster shares."""

    cluster_name: str
    node_role_name: str
    tags: Mapping[str, str]


def _requirement(key: str, operator: str, values: Sequence[str] = ()) -> dict[str, Any]:
    requirement: dict[str, Any] = {"key": key, "operator": operator}
    if values:
        requirement["values"] = list(values)
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
    rendered += [_requirement(r.key, r.operator, r.values) for r in pool.requirements]
    # Keep out every accelerator the pool is not for: whatever its other requirements, a CPU pool then cannot launch
    # a GPU instance (untainted, outside every GPU limit) for a pending pod that tolerates the GPU taint.
    for accelerator, (key, operator) in EXCLUDE.items():
        if pool.accelerator != accelerator and not any(excludes(accelerator, r.key, r.operator) for r in pool.requirements):
            rendered.append(_requirement(key, operator))
    return rendered


def render_nodepool(name: str, pool: NodePoolSpec, *, startup_taints: Sequence[Taint] = ()) -> dict[str, Any]:
    template_spec: dict[str, Any] = {
        "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": pool.node_class},
        "requirements": requirements(pool),
        "expireAfter": pool.expire_after,
    }
    if pool.taints:
        template_spec["taints"] = [Taint(t.key, t.value, t.effect).as_dict() for t in pool.taints]
    if startup_taints:
        template_spec["startupTaints"] = [t.as_dict() for t in startup_taints]
    template_spec["terminationGracePeriod"] = pool.termination_grace_period
    spec: dict[str, Any] = {
        "template": {"metadata": {"labels": {POOL_LABEL: name, **pool.labels}}, "spec": template_spec},
        "limits": dict(pool.limits),
        "disruption": pool.disruption.model_dump(by_alias=True, exclude_none=True),
    }
    if pool.weight is not None:
        spec["weight"] = pool.weight
    return {"apiVersion": NODEPOOL_API, "kind": "NodePool", "metadata": {"name": name}, "spec": spec}


def _ebs(size_gib: int, iops: int, throughput: int) -> dict[str, Any]:
    return {
        "volumeSize": f"{size_gib}Gi",
        "volumeType": "gp3",
        "iops": iops,
        "throughput": throughput,
        "encrypted": True,
        "deleteOnTermination": True,
    }


def render_nodeclass(name: str, node_class: NodeClassSpec, context: NodeClassContext) -> dict[str, Any]:
    discovery = [{"tags": {DISCOVERY_TAG: context.cluster_name}}]
    volume = _ebs(node_class.root_volume_gib, node_class.root_volume_iops, node_class.root_volume_throughput_mibps)
    if node_class.ami_family == "bottlerocket":
        # Bottlerocket keeps its OS on a small volume and images, logs and pod data on the second one.
        devices = [
            {"deviceName": "/dev/xvda", "ebs": _ebs(4, 3000, 125)},
            {"deviceName": "/dev/xvdb", "rootVolume": True, "ebs": volume},
        ]
        alias = f"bottlerocket@{versions.BOTTLEROCKET_AMI.version}"
    else:
        devices = [{"deviceName": "/dev/xvda", "rootVolume": True, "ebs": volume}]
        alias = f"al2023@{versions.AL2023_AMI.version}"
    return {
        "apiVersion": NODECLASS_API,
        "kind": "EC2NodeClass",
        "metadata": {"name": name},
        "spec": {
            "amiSelectorTerms": [{"alias": alias}],
            "role": context.node_role_name,
            "subnetSelectorTerms": discovery,
            "securityGroupSelectorTerms": discovery,
            "blockDeviceMappings": devices,
            "metadataOptions": {
                "httpEndpoint": "enabled",
                "httpProtocolIPv6": "disabled",
                "httpTokens": "required",
                "httpPutResponseHopLimit": node_class.imds_hop_limit,
            },
            "tags": dict(context.tags),
        },
    }
