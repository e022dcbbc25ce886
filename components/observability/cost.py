"""What each team's GPUs cost, as Prometheus recording rules (pure).

A team is a namespace (a Kubeflow profile's, or a team stack's). Every minute the rules record, per namespace and
per node pool, capacity type and instance type:

- `GPUS_HELD`: the GPUs that the namespace's running pods request (kube-state-metrics). This is what the bill counts:
  a GPU a pod holds is paid for, busy or not;
- `GPUS_BUSY`: the same GPUs weighted by how busy DCGM saw them (utilisation ÷ 100), to set against the paid ones;
- `GPU_COST_RATE`: `GPUS_HELD` × the GPU-hour price of the node's instance type, in USD per hour.

And per node pool, capacity type and instance type, what the pools ran, so that the bill adds up:

- `POOL_GPUS`: the GPUs of every node the pool has (its instance type's GPUs, `INSTANCE_GPUS`, from the pinned
  instance facts), counted from the minute the node is in kube-state-metrics until it is gone;
- `GPUS_UNALLOCATED`: `POOL_GPUS` less the GPUs running pods hold there (`GPUS_HELD`): idle GPUs of running nodes,
  nodes waiting to be consolidated, GPUs of pods still pulling their image or starting (Pending, which includes
  the time spent downloading images: kubernetes.io/docs/concepts/workloads/pods/pod-lifecycle/), the 7 GPUs an
  8-GPU node's one 1-GPU pod leaves; every namespace's `GPUS_HELD` plus it is `POOL_GPUS`, sample by sample;
- `POOL_COST_RATE` and `UNALLOCATED_COST_RATE`: those × the GPU-hour price, in USD per hour.

The price of a GPU-hour is one static series per NVIDIA instance type (`GPU_HOUR_PRICE`), rendered from the pinned
on-demand table (`components.instances.prices`): the instance's hourly price ÷ its GPUs. The table has no spot
prices, so spot capacity is priced at the on-demand list price, which a spot instance never bills above: for spot
pools the figure is a ceiling. The capacity type stays a label, so a bill shows which GPU-hours ran on spot, and
`python -m components.tools.cost --by-team` prices those at EC2's spot price history instead (Prometheus cannot call
AWS). The rules keep no AZ label, so that price is a regional average.

Because each rule is evaluated once per `INTERVAL_SECONDS`, the GPU-hours over a window are the sum of the recorded
samples in it ÷ `EVALUATIONS_PER_HOUR` (`sum_over_time(...[window]) / 60`), and the dollars likewise. A minute in
which Prometheus did not evaluate is not counted; `max(count_over_time(GPU_HOUR_PRICE[window]))` says how many
minutes were.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from .adapter import DCGM_GPU_UTIL, DCGM_NAMESPACE_LABEL, DCGM_POD_LABEL

MONITORING_API = "monitoring.coreos.com/v1"

#: How often the cost rules run, and so what one recorded sample is worth (1/60 of an hour).
INTERVAL_SECONDS = 60
EVALUATIONS_PER_HOUR = 3600 // INTERVAL_SECONDS

#: The node labels the rules read from kube-state-metrics' `kube_node_labels`, by the label the rules give them. KSM
#: exposes a node label only when its `--metric-labels-allowlist` names it (`ksm_label_allowlist`), as
#: `label_<key with every character outside [a-zA-Z0-9_] as _>`.
NODE_LABELS: Mapping[str, str] = {
    "nodepool": "karpenter.sh/nodepool",
    "capacity_type": "karpenter.sh/capacity-type",
    "instance_type": "node.kubernetes.io/instance-type",
}
#: The labels every cost series carries, besides the namespace.
POOL_LABELS = tuple(NODE_LABELS)

#: The recorded series.
NODE_POOL = "eksml:node_pool:info"
GPU_HOUR_PRICE = "eksml:gpu_hour_price:usd"
GPUS_HELD = "eksml:namespace_pool:gpus_held"
GPUS_BUSY = "eksml:namespace_pool:gpus_busy"
GPU_COST_RATE = "eksml:namespace_pool:gpu_cost_usd_per_hour"
INSTANCE_GPUS = "eksml:instance_type:gpus"
POOL_GPUS = "eksml:pool:gpus"
GPUS_UNALLOCATED = "eksml:pool:gpus_unallocated"
POOL_COST_RATE = "eksml:pool:gpu_cost_usd_per_hour"
UNALLOCATED_COST_RATE = "eksml:pool:unallocated_gpu_cost_usd_per_hour"
RECORDED = frozenset(
    {
        NODE_POOL,
        GPU_HOUR_PRICE,
        GPUS_HELD,
        GPUS_BUSY,
        GPU_COST_RATE,
        INSTANCE_GPUS,
        POOL_GPUS,
        GPUS_UNALLOCATED,
        POOL_COST_RATE,
        UNALLOCATED_COST_RATE,
    }
)

#: kube-state-metrics' names for what the rules read.
KSM_NODE_LABELS = "kube_node_labels"
KSM_REQUESTS = "kube_pod_container_resource_requests"
KSM_PHASE = "kube_pod_status_phase"
KSM_GPU_RESOURCE = "nvidia_com_gpu"


def ksm_label(key: str) -> str:
    """The label kube-state-metrics gives a Kubernetes label key on `kube_node_labels`."""
    return "label_" + "".join(c if c.isascii() and (c.isalnum() or c == "_") else "_" for c in key)


def ksm_label_allowlist() -> list[str]:
    """kube-state-metrics' `metricLabelsAllowlist`: the node labels the cost rules read."""
    return [f"nodes=[{','.join(NODE_LABELS.values())}]"]


def _node_pool_expr() -> str:
    expr = KSM_NODE_LABELS
    for label, key in NODE_LABELS.items():
        # "(.*)": a node without the label (the system node group) gets none, and still joins.
        expr = f'label_replace({expr}, "{label}", "$1", "{ksm_label(key)}", "(.*)")'
    return f"max by (node, {', '.join(POOL_LABELS)}) ({expr})"


def _by_pool(expr: str) -> str:
    pools = ", ".join(POOL_LABELS)
    return f"sum by (namespace, {pools}) ({expr} * on (node) group_left ({pools}) {NODE_POOL})"


def _price_rule(instance_type: str, usd: Decimal) -> dict[str, Any]:
    return {
        "record": GPU_HOUR_PRICE,
        "expr": f"vector({usd.normalize():f})",
        "labels": {"instance_type": instance_type},
    }


def _gpus_rule(instance_type: str, gpus: int) -> dict[str, Any]:
    return {"record": INSTANCE_GPUS, "expr": f"vector({gpus})", "labels": {"instance_type": instance_type}}


def _priced(gpus: str) -> str:
    """A series of GPUs by instance type, in USD per hour at each type's GPU-hour price."""
    return f"{gpus} * on (instance_type) group_left () {GPU_HOUR_PRICE}"


def _pool_rules() -> list[dict[str, Any]]:
    """What the pools ran, what of it no running pod held, and both priced (read after GPUS_HELD is recorded)."""
    pools = ", ".join(POOL_LABELS)
    # A node's GPUs from its instance type, not from the device plugin's capacity: a node is paid for from the
    # minute it joins, before the plugin advertises a GPU; and these are physical GPUs, as GPUS_HELD counts them.
    node_gpus = f"{NODE_POOL} * on (instance_type) group_left () {INSTANCE_GPUS}"
    held = f"sum by ({pools}) ({GPUS_HELD})"
    # `or`: a pool no running pod holds a GPU of has all its GPUs unallocated.
    unallocated = f"({POOL_GPUS} - on ({pools}) {held}) or {POOL_GPUS}"
    return [
        {"record": POOL_GPUS, "expr": f"sum by ({pools}) ({node_gpus})"},
        {"record": GPUS_UNALLOCATED, "expr": unallocated},
        {"record": POOL_COST_RATE, "expr": _priced(POOL_GPUS)},
        {"record": UNALLOCATED_COST_RATE, "expr": _priced(GPUS_UNALLOCATED)},
    ]


def cost_rules(
    name: str,
    namespace: str,
    gpu_hour_prices: Mapping[str, Decimal],
    gpu_shares: int = 1,
    instance_gpus: Mapping[str, int] | None = None,
) -> dict[str, Any]:
    """The PrometheusRule recording GPUs held and busy per namespace and pool, and what they cost per hour at
    `gpu_hour_prices` (USD per GPU-hour by instance type; `components.instances.prices.gpu_hour_prices`).
    `gpu_shares` is how many times the device plugin advertises each GPU (time-slicing replicas; 1: not shared): a
    pod asking one `nvidia.com/gpu` then holds that share of a GPU. `instance_gpus` is the GPUs of each NVIDIA
    instance type (`components.instances.accelerators.nvidia_gpu_counts`), from which the rules count the GPUs the
    pools ran and those no running pod held; default: none, and a pool's GPUs are not recorded."""
    if gpu_shares < 1:
        raise ValueError(f"gpu_shares: expected a whole number of at least 1, got {gpu_shares}")
    counts = dict(instance_gpus or {})
    wrong = sorted(kind for kind, gpus in counts.items() if gpus < 1)
    if wrong:
        raise ValueError(f"instance_gpus: expected at least 1 GPU per instance type, got {wrong}")
    running = f'{KSM_PHASE}{{phase="Running"}} == 1'
    requests = f'sum by (namespace, pod, node) ({KSM_REQUESTS}{{resource="{KSM_GPU_RESOURCE}"}})'
    if gpu_shares > 1:
        requests = f"({requests} / {gpu_shares})"
    held = f"({requests} and on (namespace, pod) ({running}))"
    # DCGM names the workload's namespace and pod on the GPU's series (kept as they are: components/gpu/operator.py),
    # and the GPU Operator's ServiceMonitor adds the node.
    busy = f'(sum by ({DCGM_NAMESPACE_LABEL}, node) ({DCGM_GPU_UTIL}{{{DCGM_POD_LABEL}!=""}}) / 100)'
    rules: list[dict[str, Any]] = [
        {"record": NODE_POOL, "expr": _node_pool_expr()},
        *(_price_rule(instance_type, usd) for instance_type, usd in sorted(gpu_hour_prices.items())),
        {"record": GPUS_HELD, "expr": _by_pool(held)},
        {"record": GPUS_BUSY, "expr": _by_pool(busy)},
        {"record": GPU_COST_RATE, "expr": _priced(GPUS_HELD)},
        *(_gpus_rule(instance_type, gpus) for instance_type, gpus in sorted(counts.items())),
        *(_pool_rules() if counts else []),
    ]
    return {
        "apiVersion": MONITORING_API,
        "kind": "PrometheusRule",
        "metadata": {"name": name, "namespace": namespace},
        # Rules of a group run in order, so each reads what the one before recorded in the same evaluation.
        "spec": {"groups": [{"name": "gpu-cost", "interval": f"{INTERVAL_SECONDS}s", "rules": rules}]},
    }
