"""Stack configuration of Karpenter: its log level, facts for accelerated families the pinned table lacks, node
classes and node pools (mappings keyed by name), and what a pool and its class must agree on."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import Field, StrictInt, StrictStr, ValidationError, model_validator

from ..config.types import ConfigModel, KeyName
from ..config.validation import FieldProblems
from ..config.validation import matches as _matches
from ..instances import accelerators
from ..instances.families import accelerator_of, name_problem
from ..scheduling import Taint
from . import efa
from .pool_checks import idle_budget_message, instance_types
from .specs import DEFAULT_NODE_CLASSES, DEFAULT_NODE_POOLS, NodeClassSpec, NodePoolSpec

Size = Annotated[StrictStr, _matches(r"[a-z0-9-]+", "an instance size like '48xlarge' or 'metal'")]


class AcceleratedFamilySpec(ConfigModel):
    """Facts about an accelerated family the pinned table does not know (keys are the family, e.g. `g7e`)."""

    gpu_name: (
        Annotated[
            StrictStr, _matches(r"[a-z0-9]([a-z0-9-]*[a-z0-9])?", "a GPU name as Karpenter labels it, like 'l40s'")
        ]
        | None
    ) = Field(
        default=None,
        description="the `karpenter.k8s.aws/instance-gpu-name` of its GPUs; required for an NVIDIA family, refused "
        "for a Neuron one",
    )
    memory_gib: StrictInt = Field(ge=1, description="memory per GPU or Neuron device")
    devices: dict[Size, Annotated[StrictInt, Field(ge=1)]] = Field(
        min_length=1, description="GPUs or Neuron devices per instance size"
    )
    architecture: Literal["amd64", "arm64"] = Field(default="amd64", description="CPU architecture of its instances")


class KarpenterConfig(ConfigModel):
    """The Karpenter controller, its node classes and node pools (mappings keyed by name)."""

    log_level: Literal["debug", "info", "error"] = Field(default="info", description="controller log level")
    accelerator_families: dict[StrictStr, AcceleratedFamilySpec] = Field(
        default_factory=dict,
        description="facts about accelerated families the pinned table (`components/instances/accelerators.py`) "
        "lacks, keyed by family (e.g. `g7e`)",
    )
    node_classes: dict[KeyName, NodeClassSpec] = Field(
        default_factory=lambda: {k: NodeClassSpec.model_validate(v) for k, v in DEFAULT_NODE_CLASSES.items()},
        description="EC2NodeClasses keyed by name (see [Node classes](#node-classes)); by default the presets of the "
        "same names, which setting this key replaces",
    )
    node_pools: dict[KeyName, NodePoolSpec] = Field(
        default_factory=lambda: {k: NodePoolSpec.model_validate(v) for k, v in DEFAULT_NODE_POOLS.items()},
        description="NodePools keyed by name; by default the presets of the same names, which setting this key "
        "replaces",
    )

    @model_validator(mode="wrap")
    @classmethod
    def _with_added_facts(cls, data: Any, handler: Any) -> KarpenterConfig:
        """Pools are validated knowing the families this config adds (their GPU names, sizes)."""
        with accelerators.added_families(_added_families(data)):
            return handler(data)

    @property
    def untainted_pools(self) -> tuple[str, ...]:
        """The pools any pod may land on (no taint), by name: what runs on them must be deleted before them."""
        return tuple(name for name, pool in sorted(self.node_pools.items()) if not pool.taints)

    @property
    def added_families(self) -> dict[str, accelerators.AcceleratedFamily]:
        return {name: _facts(name, spec) for name, spec in self.accelerator_families.items()}

    @model_validator(mode="after")
    def _check(self) -> KarpenterConfig:
        problems = []
        for name, spec in self.accelerator_families.items():
            problems += [(f"acceleratorFamilies.{name}", p) for p in _family_problems(name, spec)]
        for name, pool in self.node_pools.items():
            node_class = self.node_classes.get(pool.node_class)
            if node_class is None:
                problems.append(
                    (
                        f"nodePools.{name}.nodeClass",
                        f"names no node class in karpenter.nodeClasses ({', '.join(sorted(self.node_classes))})",
                    )
                )
                continue
            problems += [
                (f"nodePools.{name}.{key}", message)
                for key, message in pool_class_problems(pool, pool.node_class, node_class)
            ]
        if problems:
            raise FieldProblems(problems)
        return self

    def warnings(self) -> list[tuple[str, str]]:
        """What is allowed but probably unintended, as (key path, message)."""
        found = []
        for name, pool in sorted(self.node_pools.items()):
            node_class = self.node_classes.get(pool.node_class)
            if (
                node_class is not None
                and "reserved" in pool.capacity_types
                and not node_class.capacity_reservation_selector_terms
            ):
                found.append((f"karpenter.nodePools.{name}.capacityTypes", reserved_message(pool.node_class)))
            if pool.accelerator == "neuron":
                found.append((f"karpenter.nodePools.{name}", NEURON_OUTSIDE_SHARES))
            if pool.accelerator is None:
                for index, budget in enumerate(pool.disruption.budgets):
                    if budget.blocks_empty_removal:
                        found.append(
                            (f"karpenter.nodePools.{name}.disruption.budgets[{index}]", idle_budget_message("CPU"))
                        )
        return found

    def shared_gpu_pools(self) -> dict[str, NodePoolSpec]:
        """The GPU pools every team shares: those that launch NVIDIA GPUs under a GPU limit. Kueue's one flavor counts
        their GPUs and selects their nodes by `scheduling.GPU_SHARE_LABEL`, which they carry."""
        return {
            name: pool
            for name, pool in sorted(self.node_pools.items())
            if pool.accelerator == "nvidia" and pool.gpu_limit and pool.node_class in self.node_classes
        }

    def efa_pools(self) -> dict[str, NodePoolSpec]:
        """Pools whose node class attaches EFA interfaces."""
        return {
            n: p
            for n, p in self.node_pools.items()
            if p.node_class in self.node_classes and self.node_classes[p.node_class].efa_interfaces
        }

    def gpu_taints(self) -> tuple[Taint, ...]:
        """Every taint of the pools that launch NVIDIA GPUs (what the GPU Operator's operands must tolerate)."""
        return _taints([p for p in self.node_pools.values() if p.accelerator == "nvidia"]) or ()

    def neuron_taints(self) -> tuple[Taint, ...] | None:
        """Every taint of the pools that launch Neuron instances (what their device plugin must tolerate); None when
        no pool does."""
        return _taints([p for p in self.node_pools.values() if p.accelerator == "neuron"])

    def efa_taints(self) -> tuple[Taint, ...] | None:
        """Every taint of the pools whose node class attaches EFA interfaces; None when there are none."""
        return _taints(list(self.efa_pools().values()))


def _taints(pools: list[NodePoolSpec]) -> tuple[Taint, ...] | None:
    if not pools:
        return None
    return tuple(sorted({t.taint for p in pools for t in p.taints}, key=lambda t: (t.key, t.value, t.effect)))


#: A platform pool that launches Neuron: teams' namespaces are capped at no Neuron device on it (docs/gpu.md).
NEURON_OUTSIDE_SHARES = (
    "launches Neuron devices, which are in no team's Kueue share: a Kubeflow team may use it only up to its "
    "`kubeflow.teams.<team>.neuronQuota` (none by default), and a team stack not at all, its namespace being allowed "
    "only what a Neuron pool of its own runs (docs/gpu.md, 'Neuron is in no team's Kueue share')"
)


def reserved_message(class_name: str) -> str:
    return (
        "lists reserved, but reserved capacity launches only into capacity reservations the node class selects, and "
        f"node class {class_name!r} has no capacityReservationSelectorTerms: Karpenter never launches reserved "
        "capacity for this pool (add the terms to the class, or leave out reserved)"
    )


def pool_class_problems(pool: NodePoolSpec, class_name: str, node_class: NodeClassSpec) -> list[tuple[str, str]]:
    """What a pool asks of its node class that the class cannot give."""
    problems: list[tuple[str, str]] = []
    cards = efa.cards_needed(node_class.interfaces)
    # A pool that names no instance types is fine: Karpenter launches only the types whose network cards fit the
    # class's interfaces (karpenter-provider-aws pkg/providers/instancetype/compatibility). Named ones are checked.
    types = instance_types(pool) if cards > 0 else None
    for instance_type in types or ():
        known = efa.NETWORK_CARDS.get(instance_type)
        if known is None:
            problems.append(
                (
                    "requirements",
                    (
                        f"{instance_type!r} is not in the EFA table (components/karpenter/efa.py); node class "
                        f"{class_name!r} needs {cards} EFA network cards"
                    ),
                )
            )
        elif known < cards:
            problems.append(
                (
                    "requirements",
                    f"{instance_type!r} has {known} network cards; node class {class_name!r} needs {cards}",
                )
            )
    return problems


def _facts(name: str, spec: AcceleratedFamilySpec) -> accelerators.AcceleratedFamily:
    vendor: accelerators.Vendor = "nvidia" if accelerator_of(name) == "nvidia" else "aws"
    return accelerators.AcceleratedFamily(
        name, vendor, name, spec.gpu_name, spec.memory_gib, dict(spec.devices), spec.architecture
    )


def _family_problems(name: str, spec: AcceleratedFamilySpec) -> list[str]:
    if name in accelerators.ACCELERATED_FAMILIES:
        return [f"{name!r} is in the pinned table (components/instances/accelerators.py); remove it here"]
    kind = accelerator_of(name)
    if kind is None or name_problem(name) is not None:
        return [f"{name!r} is not an accelerated family name (category g, gr, p, inf or trn, like 'g7e')"]
    if kind == "nvidia" and spec.gpu_name is None:
        return ["an NVIDIA family needs gpuName: the value of karpenter.k8s.aws/instance-gpu-name on its instances"]
    if kind == "neuron" and spec.gpu_name is not None:
        return ["a Neuron family has no GPU name; leave out gpuName"]
    return []


def _added_families(data: Any) -> Mapping[str, accelerators.AcceleratedFamily]:
    """The families raw config adds, as far as they validate (their own errors are reported by the config)."""
    raw = data.get("acceleratorFamilies", data.get("accelerator_families")) if isinstance(data, Mapping) else None
    if not isinstance(raw, Mapping):
        return {}
    added = {}
    for name, value in raw.items():
        try:
            spec = AcceleratedFamilySpec.model_validate(value)
        except ValidationError:
            continue
        if isinstance(name, str) and not _family_problems(name, spec):
            added[name] = _facts(name, spec)
    return added
