"""What a training pool (`eksml.io/workload: training`) must be so that a job on it is not killed by the platform.

Trainer pods are confined to training pools (`kubeflow.gpu_scheduling`) and carry `karpenter.sh/do-not-disrupt`,
which holds back consolidation and drift but neither expiry nor a spot reclaim: in Karpenter v1 expiry is a forceful
disruption that drains the node whatever its budgets and its pods' annotation say, bounded only by
`terminationGracePeriod`, and a spot reclaim gives two minutes' notice (karpenter.sh/docs/concepts/disruption/,
"Forceful methods" and "Pod-Level Controls", v1.14). So a training pool never expires its nodes and runs no spot.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..scheduling import TRAINING_WORKLOAD, WORKLOAD_LABEL

#: Karpenter's spelling of a pool whose nodes never expire (the NodePool CRD's `expireAfter`).
NEVER = "Never"


def is_training_pool(labels: Mapping[str, str]) -> bool:
    """Whether a pool with these labels is a training pool: where trainer pods run, so its nodes must last."""
    return labels.get(WORKLOAD_LABEL) == TRAINING_WORKLOAD


def training_problems(
    labels: Mapping[str, str],
    capacity_types: Sequence[str],
    expire_after: str,
    skip: frozenset[str] = frozenset(),
) -> list[tuple[str, str]]:
    """(field, problem) for each way a pool with these labels, capacity types and node lifetime would drain, or lose,
    a running job's node, if it is a training pool; `skip`: fields that did not validate."""
    if "labels" in skip or not is_training_pool(labels):
        return []
    why = f"a training pool ({WORKLOAD_LABEL}: {TRAINING_WORKLOAD}, where trainer pods run)"
    problems = []
    if "expireAfter" not in skip and expire_after != NEVER:
        problems.append(
            (
                "expireAfter",
                (
                    f"{why} must not expire its nodes: expiry drains a node mid-job whatever its pods' "
                    f"karpenter.sh/do-not-disrupt says; set {NEVER} (an empty node still goes, and a new AMI replaces "
                    f"a node between jobs, as drift), got {expire_after!r}"
                ),
            )
        )
    if "capacityTypes" not in skip and "spot" in capacity_types:
        problems.append(
            (
                "capacityTypes",
                (
                    f"{why} runs on-demand or reserved capacity only: a spot reclaim gives two minutes' notice, too "
                    f"little to checkpoint, got {list(capacity_types)}"
                ),
            )
        )
    return problems
