"""EC2 instance family names in NodePool specs: which accelerator a family, instance type or category carries, and
whether a family or instance type is one EC2 offers.

Families and instance types are checked against pinned facts: the families EC2 offers with their sizes
(`ec2_families.yaml`, from Karpenter's own generated data at the pinned version, with its source and date). A name
that is well formed but does not exist ('g5dn', 'p9') would otherwise be rendered into a NodePool that launches
nothing, and priced as if it did. A family newer than the list is added deliberately: an accelerated one with its
facts under `karpenter.acceleratorFamilies` (`accelerators.py`), whose name must then have the shape EC2 names take
(`name_problem`). What a pool's GPU guarantees need (taint, limit) follows from the category alone: g, gr and p carry
NVIDIA GPUs, inf and trn Neuron devices, so every pool that is not for an accelerator renders a requirement that
excludes accelerated instances (`render.py`).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from importlib import resources
from types import MappingProxyType
from typing import Literal

import yaml

from . import accelerators

Accelerator = Literal["nvidia", "neuron"]

#: The pinned list of the families EC2 offers, beside this module.
EC2_DATA = "ec2_families.yaml"


def _read_ec2_families() -> tuple[Mapping[str, tuple[str, ...]], str]:
    document = yaml.load(  # libyaml: the pure-Python reader took 30 ms of every start
        resources.files(__package__ or "").joinpath(EC2_DATA).read_text(encoding="utf-8"), Loader=yaml.CSafeLoader
    )
    families = {family: tuple(sizes) for family, sizes in document["families"].items()}
    return MappingProxyType(families), str(document["date"])


#: Every instance family EC2 offers, with its sizes (`ec2_families.yaml`, which names its source), and the date of
#: those facts.
EC2_FAMILIES, EC2_FACTS_DATE = _read_ec2_families()

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
    """Why `family` cannot be an instance family Karpenter launches, or None: it must be one EC2 offers (the pinned
    list), or an accelerated family the stack added with its facts."""
    if accelerators.facts(family) is not None:
        return None
    category = category_of(family)
    if category in _OTHER_ACCELERATED_CATEGORIES:
        return (
            f"{family!r} carries {_OTHER_ACCELERATED_CATEGORIES[category]} accelerators, which this "
            "platform neither taints, caps nor runs a device plugin for"
        )
    if family not in EC2_FAMILIES:
        return _unknown_family(family, category)
    if category not in accelerators.CPU_CATEGORIES and category not in ACCELERATED_CATEGORIES:
        known_categories = sorted(accelerators.CPU_CATEGORIES | ACCELERATED_CATEGORIES.keys())
        what = f"the instance category {category!r}" if category else "no instance category"
        return f"{family!r} is in {what}, which this platform's nodes do not run on; expected one of " + ", ".join(
            known_categories
        )
    return None


def known_families() -> list[str]:
    """The families EC2 offers (pinned) and the accelerated ones the stack being validated added."""
    return sorted(EC2_FAMILIES.keys() | accelerators.known_families().keys())


def nearest_families(family: str) -> list[str]:
    """The known families whose names are closest to `family` (at most three), those of its category first."""
    known = known_families()
    category = category_of(family)
    same = difflib.get_close_matches(family, [k for k in known if category_of(k) == category], n=3, cutoff=0.5)
    return same or difflib.get_close_matches(family, known, n=3, cutoff=0.5)


def _unknown_family(family: str, category: str | None) -> str:
    nearest = nearest_families(family)
    hint = f"; nearest known: {', '.join(nearest)}" if nearest else ""
    newer = (
        "a newer accelerated family is added with its facts under karpenter.acceleratorFamilies"
        if category in ACCELERATED_CATEGORIES
        else "the list is the pinned Karpenter release's instance data"
    )
    return (
        f"{family!r} is not an instance family EC2 offers (components/instances/{EC2_DATA}, as of "
        f"{EC2_FACTS_DATE}){hint} ({newer})"
    )


def name_problem(family: str) -> str | None:
    """Why `family` cannot be the name of an instance family (by its shape and category), or None: what a family the
    stack adds under `karpenter.acceleratorFamilies` is checked for, since the pinned list does not know it yet."""
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
    """Why `instance_type` cannot be an instance type ('g5.xlarge') EC2 offers, or None."""
    family, dot, size = instance_type.partition(".")
    if not dot or not re.fullmatch(r"[a-z0-9-]+", size):
        return f"{instance_type!r} is not an instance type like 'g5.xlarge'"
    if problem := family_problem(family):
        return problem
    sizes = sizes_of(family)
    if sizes and size not in sizes:
        return f"{instance_type!r} is not an instance type EC2 offers: {family} comes in {', '.join(sizes)}"
    return None


def sizes_of(family: str) -> tuple[str, ...]:
    """The sizes a known family comes in (those the stack gave facts for, for a family it added); () if unknown."""
    if family in EC2_FAMILIES:
        return EC2_FAMILIES[family]
    added = accelerators.facts(family)
    return tuple(added.devices) if added is not None else ()


#: Every size some known family comes in.
ALL_SIZES = frozenset(size for sizes in EC2_FAMILIES.values() for size in sizes)


def size_problem(size: str) -> str | None:
    """Why `size` is no instance size any family comes in, or None."""
    known = ALL_SIZES | {s for f in accelerators.known_families().values() for s in f.devices}
    if size in known:
        return None
    nearest = difflib.get_close_matches(size, sorted(known), n=3, cutoff=0.6)
    hint = f"; nearest known: {', '.join(nearest)}" if nearest else ""
    return f"{size!r} is not an instance size of any family EC2 offers{hint}"


def category_problem(category: str) -> str | None:
    known = accelerators.CPU_CATEGORIES | ACCELERATED_CATEGORIES.keys()
    if category in known:
        return None
    return f"unknown instance category {category!r}; expected one of {', '.join(sorted(known))}"
