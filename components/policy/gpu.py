"""The GPU rules' checks on Karpenter NodePools (pure), for `policy.rules`: how a pool is read (requirements,
capacity types, whether it launches GPUs) and the checks that look at one pool at a time.

Properties may be pulumi-policy's read-only proxies under CrossGuard: structure is tested with `Mapping` /
`Sequence`, never `dict` / `list`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..karpenter.training import NEVER
from ..karpenter.validation import requirement_accelerators
from ..scheduling import GPU_RESOURCE, GPU_TAINT, WORKLOAD_LABEL
from .model import Resource, known, releases

NODEPOOL = "kubernetes:karpenter.sh/v1:NodePool"
#: (operator, values) of a requirement a pool does not have.
_NONE: tuple[str, list[str]] = ("", [])


def _pool_spec(resource: Resource) -> Mapping[str, Any]:
    return resource.props.get("spec") or {}


def _template(resource: Resource) -> Mapping[str, Any]:
    return _pool_spec(resource).get("template") or {}


def _requirements(resource: Resource) -> dict[str, tuple[str, list[str]]]:
    """A pool's requirements: key -> (operator, values)."""
    requirements = (_template(resource).get("spec") or {}).get("requirements") or []
    return {r.get("key"): (r.get("operator") or "In", [str(v) for v in r.get("values") or []]) for r in requirements}


def _allowed(resource: Resource, key: str) -> list[str] | None:
    """The values an `In` requirement on `key` allows; None when the pool has none."""
    operator, values = _requirements(resource).get(key, _NONE)
    return values if operator == "In" else None


def _taints(resource: Resource) -> Sequence[Mapping[str, Any]]:
    return (_template(resource).get("spec") or {}).get("taints") or []


def _labels(resource: Resource) -> Mapping[str, str]:
    return (_template(resource).get("metadata") or {}).get("labels") or {}


_CAPACITY_TYPES = {"spot", "on-demand", "reserved"}
#: What a pool may launch when it has no capacity-type requirement: Karpenter defaults to on-demand.
_DEFAULT_CAPACITY = ("In", ["on-demand"])


def capacity_types(resource: Resource) -> set[str]:
    operator, values = _requirements(resource).get("karpenter.sh/capacity-type", _DEFAULT_CAPACITY)
    if operator == "NotIn":
        return _CAPACITY_TYPES - set(values)
    return set(_CAPACITY_TYPES) if operator == "Exists" else set(values)


def is_gpu_pool(resource: Resource) -> bool:
    """Whether a pool launches NVIDIA GPU nodes, however it chooses them: an nvidia.com/gpu limit, or any requirement
    that asks for GPU instances, read as the NodePool specs read theirs (`karpenter.validation`): GPU name, count or
    manufacturer labels, instance families or types of the GPU facts table, GPU categories."""
    requirements = (_template(resource).get("spec") or {}).get("requirements") or []
    return GPU_RESOURCE in (_pool_spec(resource).get("limits") or {}) or any(
        "nvidia"
        in requirement_accelerators(r.get("key"), r.get("operator") or "In", [str(v) for v in r.get("values") or []])
        for r in requirements
    )


def _workload(resource: Resource) -> str | None:
    return _labels(resource).get(WORKLOAD_LABEL)


# ------------------------------------------------------------------------------------------------------- checks


def gpu_pool_tainted(resource: Resource) -> Iterable[str]:
    if is_gpu_pool(resource) and not any(
        t.get("key") == GPU_TAINT.key and t.get("effect") == GPU_TAINT.effect for t in _taints(resource)
    ):
        yield f"GPU NodePool {resource.name} has no {GPU_TAINT.key}:{GPU_TAINT.effect} taint"


def gpu_pool_capped(resource: Resource) -> Iterable[str]:
    if is_gpu_pool(resource) and GPU_RESOURCE not in (_pool_spec(resource).get("limits") or {}):
        yield f"GPU NodePool {resource.name} has no {GPU_RESOURCE} limit"


def training_pool(resource: Resource) -> Iterable[str]:
    if _workload(resource) != "training":
        return
    capacity = capacity_types(resource)
    if "spot" in capacity:  # reserved capacity is not interrupted either
        yield f"training NodePool {resource.name} allows {sorted(capacity)} capacity; use on-demand (or reserved) only"
    disruption = _pool_spec(resource).get("disruption") or {}
    if disruption.get("consolidationPolicy") != "WhenEmpty":
        yield f"training NodePool {resource.name} may be consolidated while busy; use consolidationPolicy WhenEmpty"
    if not disruption.get("budgets"):
        yield f"training NodePool {resource.name} has no disruption budgets"
    # Karpenter's default lifetime is 720h; expiry drains a node whatever its pods' do-not-disrupt says
    # (karpenter.sh/docs/concepts/disruption/, "Forceful methods"), so a training node must never expire.
    expire_after = (_template(resource).get("spec") or {}).get("expireAfter", "720h")
    if expire_after != NEVER:
        yield (
            f"training NodePool {resource.name} expires its nodes after {expire_after}, mid-job; "
            f"use expireAfter {NEVER}"
        )


def inference_flexible(resource: Resource) -> Iterable[str]:
    if _workload(resource) != "inference":
        return
    types = _allowed(resource, "node.kubernetes.io/instance-type")
    if types is not None and len(types) < 2:
        yield f"inference NodePool {resource.name} allows a single instance type; spot capacity for it runs out"


def disruption_set(resource: Resource) -> Iterable[str]:
    disruption = _pool_spec(resource).get("disruption") or {}
    missing = [k for k in ("consolidationPolicy", "consolidateAfter", "budgets") if not disruption.get(k)]
    if missing:
        yield f"NodePool {resource.name} does not set disruption {missing}"


# ------------------------------------------------------------------------------------------------ stack checks


def _allows_spot(pool: Resource) -> bool:
    return "spot" in capacity_types(pool)


def _warns_of_spot_interruption(rule: Resource) -> bool:
    return "EC2 Spot Instance Interruption Warning" in str(rule.props.get("eventPattern"))


def _interruption_queue_set(karpenter: Resource) -> bool:
    return bool(((karpenter.props.get("values") or {}).get("settings") or {}).get("interruptionQueue"))


def spot_needs_queue(resources: Sequence[Resource]) -> Iterable[tuple[str, str]]:
    spot_pools = [r for r in resources if r.type == NODEPOOL and known(r, _allows_spot, False)]
    if not spot_pools:
        return
    has_queue = any(r.type == "aws:sqs/queue:Queue" for r in resources)
    has_rule = any(
        r.type == "aws:cloudwatch/eventRule:EventRule" and known(r, _warns_of_spot_interruption, True)
        for r in resources
    )
    karpenter = releases(resources).get("karpenter")
    wired = karpenter is not None and known(karpenter, _interruption_queue_set, True)
    if not (has_queue and has_rule and wired):
        for pool in spot_pools:
            yield (
                pool.urn,
                f"NodePool {pool.name} allows spot but the stack has no interruption queue wired to Karpenter",
            )


def _dcgm_enabled(operator: Resource) -> bool:
    return ((operator.props.get("values") or {}).get("dcgmExporter") or {}).get("enabled") is not False


def gpu_needs_operator(resources: Sequence[Resource]) -> Iterable[tuple[str, str]]:
    gpu_pools = [r for r in resources if r.type == NODEPOOL and known(r, is_gpu_pool, False)]
    if not gpu_pools:
        return
    by_chart = releases(resources)
    operator = by_chart.get("gpu-operator")
    device_plugin = operator is not None or "nvidia-device-plugin" in by_chart
    dcgm = (operator is not None and known(operator, _dcgm_enabled, True)) or "dcgm-exporter" in by_chart
    for pool in gpu_pools:
        if not device_plugin:
            yield pool.urn, f"GPU NodePool {pool.name} but no GPU Operator or device plugin in the stack"
        if not dcgm:
            yield pool.urn, f"GPU NodePool {pool.name} but no DCGM exporter: GPU use would be invisible"
