"""EC2 instance family names in NodePool specs: which accelerator a family, instance type or category carries, and
whether a family name is one EC2 could have.

Families are checked by the shape of their name, not against a list: AWS adds several a quarter (c8id, m8azn, p6-b200,
g7e, ... in Karpenter's own generated list within months), and a stale list would refuse real families while
protecting nothing. What a pool's GPU guarantees need (taint, limit) follows from the category alone: g, gr and p
carry NVIDIA GPUs, inf and trn Neuron devices, so a family the facts table (`accelerators.py`) does not know is still
recognised as accelerated, and every pool that is not for an accelerator renders a requirement that excludes
accelerated instances (`render.py`). The shape check catches the usual mistakes ('M7I', 'zz9', 'm7ii', 'c7x').
"""

from __future__ import annotations

import difflib
import re
from typing import Literal

from components.instances import accelerators

Accelerator = Literal["nvidia", "neuron"]

#: karpenter.k8s.aws/instance-category values of accelerated instances, by the accelerator they carry. Categories
#: of other accelerators (dl: Gaudi, f: FPGA, vt: video) are deliberately absent: the platform runs neither.
ACCELERATED_CATEGORIES: dict[str, Accelerator] = {
    "g": "nvidia",
    "gr": "nvidia",
    "p": "nvidia",
    "inf": "neuron",
    "trn": "neuron",
}
_OTHER_ACCELERATED_CATEGORIES = {"dl": "Gaudi", "f": "FPGA", "vt": "video transcoding"}

#: Category, generation, at most one processor letter (a AMD, g Graviton, i Intel), then capability letters, each at
#: most once (b EBS-optimised, d local NVMe, e extra memory or storage, n network, z high frequency), and an optional
#: '-flex'. Source: "Amazon EC2 instance type naming conventions",
#: https://docs.aws.amazon.com/ec2/latest/instancetypes/instance-type-names.html (checked against the families in
#: karpenter-provider-aws pkg/providers/instancetype/zz_generated.bandwidth.go).
_CPU_FAMILY = re.compile(
    r"(?P<category>[a-z]+?)(?P<generation>[1-9])(?P<processor>[agi]?)(?P<capabilities>[bdenz]*)(-flex)?"
)
#: Accelerated families follow the same convention, and some name their accelerator after a dash: p6-b200,
#: p6e-gb200 (Grace), trn2u.
_ACCELERATED_FAMILY = re.compile(
    r"(?P<category>[a-z]+?)(?P<generation>[1-9])(?P<processor>[agi]?)(?P<capabilities>[bdenuz]*)(-(?P<accelerator>[a-z]+[0-9]+))?"
)
_CATEGORY = re.compile(r"[a-z]+?(?=[0-9])")
_SHAPE_HINT = (
    "a category, a generation digit, at most one of a/g/i, each of b/d/e/n/z at most once, optionally '-flex' (e.g. "
    "'m7i', 'c6gn', 'm7i-flex')"
)
_ACCELERATED_HINT = (
    "a category, a generation digit, at most one of a/g/i, capability letters, optionally '-<accelerator>' (e.g. "
    "'g6e', 'g5g', 'p6-b200')"
)


def category_of(family: str) -> str | None:
    """The karpenter.k8s.aws/instance-category of a family ('g' for g4dn, 'inf' for inf2), None if it has none."""
    found = _CATEGORY.match(family)
    return found.group(0) if found else None


def generation_of(family: str) -> int | None:
    """The karpenter.k8s.aws/instance-generation of a family (5 for g5g, 6 for p6-b200)."""
    found = re.match(r"[a-z]+?([0-9]+)", family)
    return int(found.group(1)) if found else None


def accelerator_of(family: str) -> Accelerator | None:
    """What a family's instances carry: from its category (the facts table agrees, and is checked to)."""
    return ACCELERATED_CATEGORIES.get(category_of(family) or "")


def architecture_of(family: str) -> Literal["amd64", "arm64"] | None:
    """The kubernetes.io/arch of a family's instances when its name or the facts say it; None when unknown."""
    known = accelerators.facts(family)
    if known is not None:
        return known.architecture
    shape = _ACCELERATED_FAMILY.fullmatch(family) if accelerator_of(family) else _CPU_FAMILY.fullmatch(family)
    if shape is None:
        return None
    if shape["processor"] == "g" or shape["category"] == "a":
        return "arm64"
    if accelerator_of(family) and (shape["accelerator"] or "").startswith("gb"):
        return "arm64"  # Grace-Blackwell superchips
    return "amd64"


def family_of_type(instance_type: str) -> str:
    """'g5' for 'g5.xlarge' (karpenter.k8s.aws/instance-family is the part before the dot)."""
    return instance_type.split(".", 1)[0]


def family_problem(family: str) -> str | None:
    """Why `family` cannot be an instance family Karpenter launches, or None."""
    if accelerators.facts(family) is not None:
        return None
    category = category_of(family)
    if category is None:
        return f"{family!r} is not an instance family like 'g5' or 'm7i'"
    if category in _OTHER_ACCELERATED_CATEGORIES:
        return (
            f"{family!r} carries {_OTHER_ACCELERATED_CATEGORIES[category]} accelerators, which this "
            "platform neither taints, caps nor runs a device plugin for"
        )
    if category in ACCELERATED_CATEGORIES:
        shape = _ACCELERATED_FAMILY.fullmatch(family)
        if shape is None or len(set(shape["capabilities"])) != len(shape["capabilities"]):
            hint = difflib.get_close_matches(family, sorted(accelerators.known_families()), n=1)
            guess = f"did you mean {hint[0]!r}? " if hint else ""
            return f"{family!r} is not an accelerated instance family name: {guess}expected {_ACCELERATED_HINT}"
        return None
    if category not in accelerators.CPU_CATEGORIES:
        known_categories = sorted(accelerators.CPU_CATEGORIES | ACCELERATED_CATEGORIES.keys())
        return (
            f"{family!r} has the unknown instance category {category!r}; expected one of {', '.join(known_categories)}"
        )
    shape = _CPU_FAMILY.fullmatch(family)
    if shape is None or len(set(shape["capabilities"])) != len(shape["capabilities"]):
        return f"{family!r} is not an instance family name: expected {_SHAPE_HINT}"
    return None


def is_graviton(family: str) -> bool:
    """Whether a family's instances are Arm (Graviton): a `g` right after the generation (m7g, c7gn, t4g, g5g)."""
    shape = _CPU_FAMILY.fullmatch(family)
    return shape is not None and shape["processor"] == "g"


def type_problem(instance_type: str) -> str | None:
    """Why `instance_type` cannot be an instance type ('g5.xlarge'), or None."""
    family, dot, size = instance_type.partition(".")
    if not dot or not re.fullmatch(r"[a-z0-9-]+", size):
        return f"{instance_type!r} is not an instance type like 'g5.xlarge'"
    return family_problem(family)


def category_problem(category: str) -> str | None:
    known = accelerators.CPU_CATEGORIES | ACCELERATED_CATEGORIES.keys()
    if category in known:
        return None
    return f"unknown instance category {category!r}; expected one of {', '.join(sorted(known))}"
