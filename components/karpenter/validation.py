"""Checks on NodePool specs that need more than a pattern: cron schedules, reserved label domains, requirement keys,
and which accelerator a raw requirement asks for (pure; the spec models call them)."""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Mapping, Sequence

from components.instances.families import ACCELERATED_CATEGORIES, Accelerator, accelerator_of, family_of_type

# ------------------------------------------------------------------------------------------------- accelerators

#: Labels Karpenter (AWS) sets on GPU instances only, all four from the same EC2 GpuInfo (and on no other instance:
#: there they "DoesNotExist"). karpenter-provider-aws pkg/providers/instancetype/types.go, computeRequirements.
GPU_KEYS = frozenset(f"karpenter.k8s.aws/instance-gpu-{name}" for name in ("name", "manufacturer", "count", "memory"))
#: Labels set on Neuron (Inferentia / Trainium) instances only, from EC2 NeuronInfo.
NEURON_KEYS = frozenset(f"karpenter.k8s.aws/instance-accelerator-{name}" for name in ("name", "manufacturer", "count"))
#: What a pool renders to exclude an accelerator it is not for, unless it already excludes it. Without it a CPU pool
#: with no category restriction may launch a GPU instance for a pending pod that tolerates the GPU taint, untainted
#: and outside every GPU limit.
EXCLUDE: Mapping[Accelerator, tuple[str, str]] = {
    "nvidia": ("karpenter.k8s.aws/instance-gpu-count", "DoesNotExist"),
    "neuron": ("karpenter.k8s.aws/instance-accelerator-count", "DoesNotExist"),
}
_KEYS: Mapping[Accelerator, frozenset[str]] = {"nvidia": GPU_KEYS, "neuron": NEURON_KEYS}

#: Operators under which a requirement admits only instances that have the label (Gt/Lt and friends need a value to
#: compare, like In). NotIn and DoesNotExist also admit instances without it.
_NEEDS_LABEL = frozenset({"In", "Exists", "Gt", "Gte", "Lt", "Lte"})


def requirement_accelerators(key: str, operator: str, values: Sequence[str]) -> set[Accelerator]:
    """The accelerators a raw requirement asks for: a GPU or Neuron label it needs, or In on families, instance types
    or categories that carry them."""
    if operator not in _NEEDS_LABEL:
        return set()
    found: set[Accelerator] = {kind for kind, keys in _KEYS.items() if key in keys}
    if operator == "In":
        if key == "karpenter.k8s.aws/instance-family":
            found |= {kind for value in values if (kind := accelerator_of(value))}
        elif key == "node.kubernetes.io/instance-type":
            found |= {kind for value in values if (kind := accelerator_of(family_of_type(value)))}
        elif key == "karpenter.k8s.aws/instance-category":
            found |= {ACCELERATED_CATEGORIES[value] for value in values if value in ACCELERATED_CATEGORIES}
    return found


def excludes(accelerator: Accelerator, key: str, operator: str) -> bool:
    """Whether a requirement keeps every instance carrying `accelerator` out."""
    return operator == "DoesNotExist" and key in _KEYS[accelerator]


# ----------------------------------------------------------------------------------------------------- labels

#: Labels Karpenter lets a NodePool set although their domain is reserved: kubernetes-sigs/karpenter
#: pkg/apis/v1/labels.go (WellKnownLabels) and the AWS labels the NodePool CRD's CEL rules admit.
_WELL_KNOWN_LABELS = frozenset(
    {
        "topology.kubernetes.io/zone",
        "topology.kubernetes.io/region",
        "node.kubernetes.io/instance-type",
        "kubernetes.io/arch",
        "kubernetes.io/os",
        "node.kubernetes.io/windows-build",
        "karpenter.sh/capacity-type",
        "topology.k8s.aws/zone-id",
        *(
            f"karpenter.k8s.aws/{name}"
            for name in (
                "instance-tenancy",
                "capacity-reservation-type",
                "capacity-reservation-id",
                "capacity-reservation-interruptible",
                "ec2nodeclass",
                "instance-encryption-in-transit-supported",
                "instance-category",
                "instance-hypervisor",
                "instance-family",
                "instance-generation",
                "instance-local-nvme",
                "instance-size",
                "instance-cpu",
                "instance-cpu-manufacturer",
                "instance-cpu-sustained-clock-speed-mhz",
                "instance-memory",
                "instance-ebs-bandwidth",
                "instance-network-bandwidth",
                "instance-gpu-name",
                "instance-gpu-manufacturer",
                "instance-gpu-count",
                "instance-gpu-memory",
                "instance-accelerator-name",
                "instance-accelerator-manufacturer",
                "instance-accelerator-count",
                "instance-capability-flex",
                "placement-group-id",
                "placement-group-partition",
            )
        ),
    }
)
#: Reserved domains (and their subdomains): the NodePool CRD rejects karpenter.sh and karpenter.k8s.aws labels, and
#: Karpenter's runtime validation the kubelet's kubernetes.io and k8s.io (the NodePool then never becomes Ready).
_RESERVED_DOMAINS = ("kubernetes.io", "k8s.io", "karpenter.sh", "karpenter.k8s.aws")
_ALLOWED_SUBDOMAINS = ("node.kubernetes.io", "node-restriction.kubernetes.io", "kops.k8s.io")
_SET_BY_KARPENTER = frozenset({"karpenter.sh/nodepool", "kubernetes.io/hostname"})


def label_problem(key: str) -> str | None:
    """Why a NodePool may not set the node label `key`, or None."""
    if key in _SET_BY_KARPENTER:
        return f"{key!r} is set on every node by Karpenter or the kubelet and cannot be set by a NodePool"
    if key in _WELL_KNOWN_LABELS:
        return None
    domain = key.split("/", 1)[0] if "/" in key else ""
    if any(domain == allowed or domain.endswith(f".{allowed}") for allowed in _ALLOWED_SUBDOMAINS):
        return None
    reserved = next((d for d in _RESERVED_DOMAINS if domain == d or domain.endswith(f".{d}")), None)
    if reserved is None:
        return None
    return (
        f"{key!r} is in the reserved domain {reserved}; use a domain of your own (e.g. 'eksml.io/...') or "
        f"node.kubernetes.io"
    )


def requirement_key_problem(key: str) -> str | None:
    """Why a NodePool requirement may not use `key`, or None. Every key the NodePool CRD admits is allowed: the
    well-known labels, and labels of your own domain (Karpenter then sets them on the nodes it launches). A key that
    is not well-known but nearly is ('node.kubernetes.io/instance-typ') is a typo that would launch nothing, so it is
    refused with the key it resembles."""
    if key in _WELL_KNOWN_LABELS:
        return None
    hint = difflib.get_close_matches(key, sorted(_WELL_KNOWN_LABELS), n=1, cutoff=0.85)
    if hint and key not in _SET_BY_KARPENTER:
        return f"unknown requirement key {key!r}; did you mean {hint[0]!r}?"
    problem = label_problem(key)
    if problem is None or key in _SET_BY_KARPENTER:
        return problem
    return f"{problem} (the keys Karpenter knows there are listed in the README)"


# ------------------------------------------------------------------------------------------------------ cron

#: The macros the NodePool CRD's schedule pattern admits (robfig/cron also knows @every, the CRD does not).
CRON_MACROS = ("annually", "yearly", "monthly", "weekly", "daily", "midnight", "hourly")
_MONTHS = {
    name: number
    for number, name in enumerate(
        ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"), 1
    )
}
_DAYS = {name: number for number, name in enumerate(("sun", "mon", "tue", "wed", "thu", "fri", "sat"))}
#: The five fields of a standard cron schedule as Karpenter parses it (robfig/cron ParseStandard): name, range, names.
_FIELDS: tuple[tuple[str, int, int, Mapping[str, int]], ...] = (
    ("minute", 0, 59, {}),
    ("hour", 0, 23, {}),
    ("day-of-month", 1, 31, {}),
    ("month", 1, 12, _MONTHS),
    ("day-of-week", 0, 6, _DAYS),
)


def cron_problem(schedule: str) -> str | None:
    """What is wrong with a disruption budget's schedule (every wrong field), or None."""
    macros = ", ".join(f"@{m}" for m in CRON_MACROS)
    if schedule.startswith("@"):
        return None if schedule[1:] in CRON_MACROS else f"unknown schedule macro {schedule!r}; expected one of {macros}"
    fields = schedule.split()
    if len(fields) != 5:
        return (
            "expected a cron schedule of five fields (minute hour day-of-month month day-of-week) like "
            f"'0 9 * * mon-fri', or one of {macros}; got {schedule!r}"
        )
    wrong = [problem for spec, text in zip(_FIELDS, fields, strict=True) if (problem := _field_problem(text, *spec))]
    return "; ".join(wrong) or None


def _field_problem(text: str, name: str, low: int, high: int, names: Mapping[str, int]) -> str | None:
    allowed = f"{low}-{high}" + (f" or {next(iter(names))}-{list(names)[-1]}" if names else "")
    where = f"{name} {text!r}"
    for part in text.split(","):
        span, slash, step = part.partition("/")
        if slash and not (step.isdigit() and int(step) > 0):
            return f"{where}: the step {step!r} must be a whole number above 0"
        if span in ("*", "?"):
            continue
        start, dash, end = span.partition("-")
        bounds = []
        for value in (start, end) if dash else (start,):
            number = names.get(value.lower(), int(value) if value.isascii() and value.isdigit() else None)
            if number is None or not low <= number <= high:
                what = "is outside" if number is not None else "is not a value in"
                return f"{where} {what} {allowed}" if value == text else f"{where}: {value!r} {what} {allowed}"
            bounds.append(number)
        if len(bounds) == 2 and bounds[0] > bounds[1]:
            return f"{where}: the range {span!r} ends before it starts"
    return None


_DURATION_PART = re.compile(r"([0-9]+)(h|m|s)")
_SECONDS = {"h": 3600, "m": 60, "s": 1}


def duration_seconds(text: str) -> int:
    """A Go duration as Karpenter writes them ("90s", "15m", "1h30m") in seconds."""
    return sum(int(number) * _SECONDS[unit] for number, unit in _DURATION_PART.findall(text))


#: Beyond a pool's grace period, what terminating its last instances and removing the finalizer takes.
DELETE_MARGIN_SECONDS = 15 * 60


def delete_timeout(grace_periods: Iterable[str]) -> str:
    """How long Pulumi waits for a NodePool or EC2NodeClass delete: the longest drain it may wait for, plus the
    termination margin. (Pulumi's default of 10 minutes gave up on drains Karpenter was still bound to finish.)"""
    seconds = max((duration_seconds(period) for period in grace_periods), default=0) + DELETE_MARGIN_SECONDS
    return f"{-(-seconds // 60)}m"
