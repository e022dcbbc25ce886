"""Checks on NodePool specs that need more than a pattern: cron schedules, reserved label domains, requirement keys,
and which accelerator a raw requirement asks for (pure; the spec models call them)."""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Mapping, Sequence

from ..instances.families import ACCELERATED_CATEGORIES, Accelerator, accelerator_of, family_of_type
from . import crd_rules

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

#: Labels every node has and a NodePool may require or set, outside the domains Karpenter reserves:
#: kubernetes-sigs/karpenter pkg/apis/v1/labels.go (WellKnownLabels) and the AWS provider's zone id.
_KUBERNETES_LABELS = frozenset(
    {
        "topology.kubernetes.io/zone",
        "topology.kubernetes.io/region",
        "node.kubernetes.io/instance-type",
        "kubernetes.io/arch",
        "kubernetes.io/os",
        "node.kubernetes.io/windows-build",
        "topology.k8s.aws/zone-id",
    }
)
#: The keys a requirement may use without a domain of its own: those above, and those the NodePool CRD's CEL rules
#: allow in the domains they reserve (karpenter.sh, karpenter.k8s.aws; `crd_rules.json`).
WELL_KNOWN_LABELS = _KUBERNETES_LABELS | crd_rules.allowed_in_reserved_domains("nodePool.requirementKey")
#: Domains Karpenter's runtime validation reserves beyond the CRD (the NodePool then never becomes Ready): the
#: kubelet's kubernetes.io and k8s.io, except these subdomains.
_KUBELET_DOMAINS = ("kubernetes.io", "k8s.io")
_ALLOWED_SUBDOMAINS = ("node.kubernetes.io", "node-restriction.kubernetes.io", "kops.k8s.io")
_RESERVED_HINT = "use a domain of your own (e.g. 'eksml.io/...') or node.kubernetes.io"


def _reserved(field: str, key: str) -> str | None:
    """Why the CRD's CEL rules on `field`, or Karpenter's runtime validation, refuse the key, or None."""
    rule = crd_rules.RULES[field]
    if key in rule.get("restrictedKeys", ()):
        return f"{key!r} is set on every node by Karpenter or the kubelet and cannot be set by a NodePool"
    # The CRD's rules compare the part before the first '/' (the whole key when it has none) by its ending.
    domain = key.split("/", 1)[0]
    for reserved, allowed in rule.get("reservedDomains", {}).items():
        if domain.endswith(reserved) and key not in allowed:
            return f"{key!r} is in the reserved domain {reserved}; {_RESERVED_HINT}"
    if key in _KUBERNETES_LABELS or "/" not in key:
        return None
    if any(domain == allowed or domain.endswith(f".{allowed}") for allowed in _ALLOWED_SUBDOMAINS):
        return None
    reserved_domain = next((d for d in _KUBELET_DOMAINS if domain == d or domain.endswith(f".{d}")), None)
    return None if reserved_domain is None else f"{key!r} is in the reserved domain {reserved_domain}; {_RESERVED_HINT}"


def label_problem(key: str) -> str | None:
    """Why a NodePool may not set the node label `key`, or None."""
    return _reserved("nodePool.labels", key)


def requirement_key_problem(key: str) -> str | None:
    """Why a NodePool requirement may not use `key`, or None. Every key the NodePool CRD admits is allowed: the
    well-known labels, and labels of your own domain (Karpenter then sets them on the nodes it launches). A key that
    is not well-known but nearly is ('node.kubernetes.io/instance-typ') is a typo that would launch nothing, so it is
    refused with the key it resembles."""
    if not crd_rules.conforms("nodePool.requirementKey", key):
        return (
            f"{key!r} is not a label key: expected an optional DNS prefix and '/', then a name of letters, digits, "
            "'-', '_' or '.' starting and ending with a letter or digit, like 'eksml.io/team' (at most "
            f"{crd_rules.RULES['nodePool.requirementKey']['maxLength']} characters)"
        )
    if key in WELL_KNOWN_LABELS:
        return None
    restricted = key in crd_rules.RULES["nodePool.requirementKey"].get("restrictedKeys", ())
    hint = difflib.get_close_matches(key, sorted(WELL_KNOWN_LABELS), n=1, cutoff=0.85)
    if hint and not restricted:
        return f"unknown requirement key {key!r}; did you mean {hint[0]!r}?"
    problem = _reserved("nodePool.requirementKey", key)
    if problem is None or restricted:
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
