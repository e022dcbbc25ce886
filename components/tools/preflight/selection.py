"""Which instance types, capacity types and zones a NodePool lets Karpenter launch (pure).

A pool is read through the requirements it renders to (`karpenter.render.requirements`: its typed fields, its extra
requirements, and the exclusion of accelerators it is not for), evaluated against each instance type's labels the way
Karpenter computes them (karpenter-provider-aws pkg/providers/instancetype/types.go, `computeRequirements`). The
preflight feeds it the instance types EC2 describes; the cost estimate feeds it the accelerated families of
`gpu_facts`. Requirements on labels neither source knows (memory, bandwidth, hypervisor, ...) are not evaluated:
they are reported, and the instance types they would remove stay in.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ...instances import accelerators as gpu_facts
from ...instances.families import category_of, family_of_type
from ...karpenter.render import requirements as rendered_requirements
from ...karpenter.specs import NodePoolSpec
from ...scheduling import GPU_RESOURCE, NEURON_CORE_RESOURCE, NEURON_RESOURCE

CAPACITY_KEY = "karpenter.sh/capacity-type"
ZONE_KEY = "topology.kubernetes.io/zone"
#: Keys that say where or how an instance runs, not which instance it is.
_PLACEMENT_KEYS = frozenset({CAPACITY_KEY, ZONE_KEY, "topology.kubernetes.io/region", "kubernetes.io/os"})
_AWS = "karpenter.k8s.aws/"
#: NeuronCores per Neuron device, by the device name as `instance-accelerator-name` spells it (what the Neuron device
#: plugin advertises as aws.amazon.com/neuroncore): AWS Neuron documentation, "Inferentia2 Architecture" and
#: "Trainium Architecture" (2 NeuronCore-v2 each), "Trainium2 Architecture" (8 NeuronCore-v3). EC2 reports the same
#: as NeuronInfo.NeuronDevices[].CoreInfo.Count, which `shape_from_ec2` prefers.
NEURON_CORES_PER_DEVICE: Mapping[str, int] = {"inferentia2": 2, "trainium": 2, "trainium2": 8}


@dataclass(frozen=True)
class InstanceShape:
    """What Karpenter's instance-type labels are computed from. `vcpus` is None where the source does not know it."""

    instance_type: str
    architecture: str  # amd64 or arm64, as kubernetes.io/arch spells it
    vcpus: int | None = None
    gpu_name: str | None = None  # instance-gpu-name: EC2's GPU name, lower-kebab-case
    gpu_count: int = 0
    gpu_memory_mib: int | None = None
    accelerator_name: str | None = None  # instance-accelerator-name: the Neuron device name
    accelerator_count: int = 0
    neuron_cores: int = 0  # NeuronCores of the whole instance

    def units(self, resource: str) -> int:
        """How many of an accelerator resource (nvidia.com/gpu, aws.amazon.com/neuron or neuroncore) one instance
        brings."""
        return {GPU_RESOURCE: self.gpu_count, NEURON_RESOURCE: self.accelerator_count}.get(
            resource, self.neuron_cores if resource == NEURON_CORE_RESOURCE else 0
        )

    def instances_within(self, limits: Mapping[str, int]) -> int:
        """How many instances of this type fit under a pool's accelerator limits (0: not one; Karpenter never
        launches a node that would take the pool over a limit)."""
        counts = [limit // units if (units := self.units(resource)) else 0 for resource, limit in limits.items()]
        return min(counts, default=0)

    @property
    def family(self) -> str:
        return family_of_type(self.instance_type)

    @property
    def size(self) -> str:
        return self.instance_type.partition(".")[2]

    @property
    def devices(self) -> int:
        """GPUs or Neuron devices per instance (what an nvidia.com/gpu or aws.amazon.com/neuron limit counts)."""
        return self.gpu_count or self.accelerator_count

    def label(self, key: str) -> str | None:
        """The value of a well-known label on nodes of this type, None where the label does not exist."""
        family = self.family
        category = category_of(family)
        generation = re.match(r"[a-z-]+?(\d+)", family)
        has_gpu = self.gpu_name is not None
        values: dict[str, str | int | None] = {
            "kubernetes.io/arch": self.architecture,
            "node.kubernetes.io/instance-type": self.instance_type,
            f"{_AWS}instance-family": family,
            f"{_AWS}instance-size": self.size,
            f"{_AWS}instance-category": category,
            f"{_AWS}instance-generation": generation.group(1) if generation else None,
            f"{_AWS}instance-cpu": self.vcpus,
            # Karpenter labels every instance with one kind of GPU, fractional ones (count 0) included.
            f"{_AWS}instance-gpu-name": self.gpu_name,
            f"{_AWS}instance-gpu-manufacturer": "nvidia" if has_gpu else None,
            f"{_AWS}instance-gpu-count": self.gpu_count if has_gpu else None,
            f"{_AWS}instance-gpu-memory": self.gpu_memory_mib if has_gpu else None,
            f"{_AWS}instance-accelerator-name": self.accelerator_name,
            f"{_AWS}instance-accelerator-manufacturer": "aws" if self.accelerator_count else None,
            f"{_AWS}instance-accelerator-count": self.accelerator_count or None,
        }
        value = values[key]
        return None if value is None else str(value)

    def knows(self, key: str) -> bool:
        if key == f"{_AWS}instance-cpu":
            return self.vcpus is not None
        if key == f"{_AWS}instance-gpu-memory":
            return self.gpu_memory_mib is not None or self.gpu_name is None
        return key in _SHAPE_KEYS


_SHAPE_KEYS = frozenset(
    {
        "kubernetes.io/arch",
        "node.kubernetes.io/instance-type",
        *(
            f"{_AWS}{name}"
            for name in (
                "instance-family",
                "instance-size",
                "instance-category",
                "instance-generation",
                "instance-cpu",
                "instance-gpu-name",
                "instance-gpu-manufacturer",
                "instance-gpu-count",
                "instance-gpu-memory",
                "instance-accelerator-name",
                "instance-accelerator-manufacturer",
                "instance-accelerator-count",
            )
        ),
    }
)


def _kebab(text: str) -> str:
    return text.strip().lower().replace(" ", "-")


def shape_from_ec2(info: Mapping[str, Any]) -> InstanceShape:
    """An InstanceShape from one entry of EC2 DescribeInstanceTypes."""
    architectures = info["ProcessorInfo"]["SupportedArchitectures"]
    gpus = (info.get("GpuInfo") or {}).get("Gpus") or []
    neurons = (info.get("NeuronInfo") or {}).get("NeuronDevices") or []
    # Karpenter sets the GPU and Neuron labels only for instances with a single kind of device.
    gpu = gpus[0] if len(gpus) == 1 else None
    neuron = neurons[0] if len(neurons) == 1 else None
    accelerator_name = _kebab(neuron["Name"]) if neuron else None
    cores = (neuron or {}).get("CoreInfo", {}).get("Count") or NEURON_CORES_PER_DEVICE.get(accelerator_name or "", 0)
    return InstanceShape(
        instance_type=info["InstanceType"],
        architecture="arm64" if "arm64" in architectures else "amd64",
        vcpus=info["VCpuInfo"]["DefaultVCpus"],
        gpu_name=_kebab(gpu["Name"]) if gpu else None,
        gpu_count=gpu["Count"] if gpu else 0,
        gpu_memory_mib=gpu["MemoryInfo"]["SizeInMiB"] if gpu else None,
        accelerator_name=accelerator_name,
        accelerator_count=neuron["Count"] if neuron else 0,
        neuron_cores=cores * neuron["Count"] if neuron else 0,
    )


def accelerated_shapes(added: Mapping[str, gpu_facts.AcceleratedFamily] | None = None) -> list[InstanceShape]:
    """Every accelerated instance type of the pinned facts table and of the families a stack adds, without vCPUs."""
    shapes = []
    for family in {**gpu_facts.ACCELERATED_FAMILIES, **(added or {})}.values():
        for size, devices in family.devices.items():
            nvidia = family.vendor == "nvidia"
            neuron = None if nvidia else _kebab(family.accelerator.removeprefix("AWS "))
            shapes.append(
                InstanceShape(
                    instance_type=f"{family.family}.{size}",
                    architecture=family.architecture,
                    gpu_name=family.gpu_name if nvidia else None,
                    gpu_count=devices if nvidia else 0,
                    gpu_memory_mib=family.memory_gib * 1024 if nvidia else None,
                    accelerator_name=neuron,
                    accelerator_count=0 if nvidia else devices,
                    neuron_cores=0 if neuron is None else devices * NEURON_CORES_PER_DEVICE.get(neuron, 0),
                )
            )
    return sorted(shapes, key=lambda s: s.instance_type)


def named_families(selection: PoolSelection) -> list[str]:
    """The instance families a pool's requirements name (In on families or instance types), in order."""
    named: list[str] = []
    for r in selection.requirements:
        if r["operator"] != "In":
            continue
        if r["key"] == f"{_AWS}instance-family":
            named += r.get("values", [])
        elif r["key"] == "node.kubernetes.io/instance-type":
            named += [family_of_type(value) for value in r.get("values", [])]
    return list(dict.fromkeys(named))


def _size_rank(size: str) -> tuple[int, str]:
    named = ("nano", "micro", "small", "medium", "large", "xlarge")
    if size in named:
        return named.index(size), size
    multiple = re.fullmatch(r"(\d+)xlarge", size)
    return (len(named) + int(multiple.group(1)), size) if multiple else (10_000, size)


def type_order(shape: InstanceShape) -> tuple[str, tuple[int, str]]:
    """Family, then size from small to large ('g5.2xlarge' before 'g5.12xlarge'), metal last."""
    return shape.family, _size_rank(shape.size)


# ------------------------------------------------------------------------------------------------- evaluation


def holds(operator: str, value: str | None, values: Sequence[str]) -> bool:
    """Karpenter's reading of one requirement against a label value (None: the label does not exist)."""
    if operator == "In":
        return value is not None and value in values
    if operator == "NotIn":
        return value is None or value not in values
    if operator == "Exists":
        return value is not None
    if operator == "DoesNotExist":
        return value is None
    if value is None or not value.lstrip("-").isdigit():
        return False
    number, bound = int(value), int(values[0])
    return {"Gt": number > bound, "Gte": number >= bound, "Lt": number < bound, "Lte": number <= bound}[operator]


@dataclass(frozen=True)
class PoolSelection:
    """What one pool may launch, read from its rendered requirements."""

    requirements: tuple[Mapping[str, Any], ...]
    capacity_types: tuple[str, ...]

    def admits(self, shape: InstanceShape) -> bool:
        return all(
            holds(r["operator"], shape.label(r["key"]), r.get("values", ()))
            for r in self.requirements
            if r["key"] not in _PLACEMENT_KEYS and shape.knows(r["key"])
        )

    def allowed(self, shapes: Iterable[InstanceShape]) -> list[InstanceShape]:
        return sorted((s for s in shapes if self.admits(s)), key=type_order)

    def unevaluated(self, shape: InstanceShape) -> list[str]:
        """Requirements this shape cannot be judged by (shown to the reader, never silently dropped)."""
        return [
            f"{r['key']} {r['operator']}" + (f" {list(r['values'])}" if r.get("values") else "")
            for r in self.requirements
            if r["key"] not in _PLACEMENT_KEYS and not shape.knows(r["key"])
        ]

    def zones(self, stack_zones: Sequence[str]) -> tuple[str, ...]:
        """The stack's AZs the pool may launch into."""
        return tuple(z for z in stack_zones if self._placement_holds(ZONE_KEY, z))

    def _placement_holds(self, key: str, value: str) -> bool:
        return all(holds(r["operator"], value, r.get("values", ())) for r in self.requirements if r["key"] == key)


def select(pool: NodePoolSpec) -> PoolSelection:
    requirements = tuple(rendered_requirements(pool))
    capacity = tuple(
        c
        for c in ("on-demand", "spot", "reserved")
        if all(holds(r["operator"], c, r.get("values", ())) for r in requirements if r["key"] == CAPACITY_KEY)
    )
    return PoolSelection(requirements=requirements, capacity_types=capacity)


def cpu_limit(pool: NodePoolSpec) -> int | None:
    """The pool's cpu limit in whole vCPUs (rounded up), None when it has none."""
    text = pool.limits.get("cpu")
    if text is None:
        return None
    if text.endswith("m"):
        return -(-int(float(text[:-1])) // 1000)
    return -(-int(float(text) * 1000) // 1000)
