"""EC2 instance family names in NodePool specs: which accelerator a family, instance type or category carries, and
whether a family name is one EC2 could have.

Accelerated families are a closed list, the table in `gpu_facts`: a pool's GPU guarantees (taint, limit, GPU names
consistent with families) depend on knowing what each one carries, so an accelerated family missing from the table is
an error that says where to add it. CPU families are checked by the shape of their name instead of a closed list:
AWS adds several a quarter (c8id, m8azn, c9g, ... in Karpenter's own generated list within months), and a stale
list would refuse real families while protecting nothing, since every pool that is not for an accelerator renders
a requirement that excludes accelerated instances (`nodepool_render`). The shape check still catches the usual
mistakes ('M7I', 'zz9', 'm7ii', 'c7x').
"""

from __future__ import annotations

import difflib
import re
from typing import Literal

from components.karpenter import accelerators as gpu_facts

Accelerator = Literal["nvidia", "neuron"]

#: karpenter.k8s.aws/instance-category values of accelerated instances, by the accelerator they carry. Categories
#: of other accelerators (dl: Gaudi, f: FPGA, vt: video) are deliberately absent: the platform runs neither.
ACCELERATED_CATEGORIES: dict[str, Accelerator] = {"g": "nvidia", "gr": "nvidia", "p": "nvidia", "inf": "neuron", "trn": "neuron"}
_OTHER_ACCELERATED_CATEGORIES = frozenset({"dl", "f", "vt"})

#: Category, generation, at most one processor letter (a AMD, g Graviton, i Intel), then capability letters, each at
#: most once (b EBS-optimised, d local NVMe, e extra memory or storage, n network, z high frequency), and an optional
#: '-flex'. Source: "Amazon EC2 instance type naming conventions",
#: https://docs.aws.amazon.com/ec2/latest/instancetypes/instance-type-names.html (checked against the families in
#: karpenter-provider-aws pkg/providers/instancetype/zz_generated.bandwidth.go).
_CPU_FAMILY = re.compile(r"(?P<category>[a-z]+?)[1-9](?P<processor>[agi]?)(?P<capabilities>[bdenz]*)(-flex)?")
_CATEGORY = re.compile(r"[a-z]+?(?=[0-9])")
_SHAPE_HINT = "a category, a generation digit, at most one of a/g/i, each of b/d/e/n/z at most once, optionally '-flex' (e.g. 'm7i', 'c6gn', 'm7i-flex')"


def category_of(family: str) -> str | None:
    """The karpenter.k8s.aws/instance-category of a family ('g' for g4dn, 'inf' for inf2), None if it has none."""
    found = _CATEGORY.match(family)
    return found.group(0) if found else None


def accelerator_of(family: str) -> Accelerator | None:
    """What a family's instances carry: from the GPU facts table, else from its category."""
    known = gpu_facts.ACCELERATED_FAMILIES.get(family)
    if known is not None:
        return "nvidia" if known.vendor == "nvidia" else "neuron"
    return ACCELERATED_CATEGORIES.get(category_of(family) or "")


def family_of_type(instance_type: str) -> str:
    """'g5' for 'g5.xlarge' (karpenter.k8s.aws/instance-family is the part before the dot)."""
    return instance_type.split(".", 1)[0]


def family_problem(family: str) -> str | None:
    """Why `family` cannot be an instance family Karpenter launches, or None."""
    if family in gpu_facts.ACCELERATED_FAMILIES:
        return None
    category = category_of(family)
    if category is None:
        return f"{family!r} is not an instance family like 'g5' or 'm7i'"
    if category in ACCELERATED_CATEGORIES or category in _OTHER_ACCELERATED_CATEGORIES:
        known = sorted(gpu_facts.ACCELERATED_FAMILIES)
        hint = difflib.get_close_matches(family, known, n=1)
        guess = f"did you mean {hint[0]!r}? " if hint else ""
        return (
            f"{family!r} is an accelerated family missing from the GPU facts table; {guess}known: {', '.join(known)} "
            "(add new ones to components/karpenter/accelerators.py)"
        )
    if category not in gpu_facts.CPU_CATEGORIES:
        known_categories = sorted(gpu_facts.CPU_CATEGORIES | ACCELERATED_CATEGORIES.keys())
        return f"{family!r} has the unknown instance category {category!r}; expected one of {', '.join(known_categories)}"
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
    known = gpu_facts.CPU_CATEGORIES | ACCELERATED_CATEGORIES.keys()
    if category in known:
        return None
    return f"unknown instance category {category!r}; expected one of {', '.join(sorted(known))}"
