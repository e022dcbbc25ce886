"""The typed EC2NodeClass spec: the v1 surface of the pinned Karpenter CRD (`../shared/reference/karpenter/crds`),
with what this platform fixes (IMDSv2, encrypted volumes, no public addresses) and the checks EC2, the CRD's CEL
rules or the node's own bootstrap would otherwise fail at launch, where Karpenter reports them only as NodeClaims
that never become nodes."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any, Literal

from pydantic import Field, StrictBool, StrictInt, StrictStr, model_validator

from ..config.validation import FieldProblems
from ..config.validation import matches as _matches
from ..tags import standard_tags
from . import crd_rules, efa
from .kubelet_spec import KubeletSpec
from .presets import NODE_CLASS_PRESETS
from .spec_types import Spec, apply_preset
from .user_data_spec import UserDataSpec

# The EC2NodeClass CRD's patterns (`crd_rules.json`), matched whole: the CRD's subnet and security group patterns are
# unanchored, so it also admits ids inside other text, which EC2 refuses.
SubnetId = Annotated[
    StrictStr, _matches(crd_rules.pattern("ec2NodeClass.subnetId"), "a subnet id like 'subnet-0123456789abcdef0'")
]
SecurityGroupId = Annotated[
    StrictStr,
    _matches(crd_rules.pattern("ec2NodeClass.securityGroupId"), "a security group id like 'sg-0123456789abcdef0'"),
]
ReservationId = Annotated[
    StrictStr,
    _matches(
        crd_rules.pattern("ec2NodeClass.capacityReservationId"), "a capacity reservation id like 'cr-0123456789abcdef0'"
    ),
]
AccountId = Annotated[
    StrictStr, _matches(crd_rules.pattern("ec2NodeClass.capacityReservationOwnerId"), "a 12-digit AWS account id")
]
PlacementGroupId = Annotated[
    StrictStr,
    _matches(crd_rules.pattern("ec2NodeClass.placementGroupId"), "a placement group id like 'pg-0123456789abcdef0'"),
]
SelectorTags = Annotated[dict[StrictStr, StrictStr], Field(min_length=1, max_length=20)]


def _tag_problems(tags: dict[str, str] | None) -> list[tuple[str, str]]:
    return [
        (f"tags.{k}", "empty tag keys and values select nothing (use '*' for any value)")
        for k, v in (tags or {}).items()
        if not k or not v
    ]


class SubnetTermSpec(Spec):
    """Subnets by id, or by tags (all must match; '*' matches any value)."""

    id: SubnetId | None = Field(default=None, description="a subnet by id (set `id` or `tags`)")
    tags: SelectorTags | None = Field(default=None, description="subnets whose tags all match (`*` matches any value)")

    def problems(self) -> list[tuple[str, str]]:
        if (self.id is None) == (self.tags is None):
            return [("", "set exactly one of id or tags")]
        return _tag_problems(self.tags)


class SecurityGroupTermSpec(Spec):
    id: SecurityGroupId | None = Field(
        default=None, description="a security group by id (set one of `id`, `name`, `tags`)"
    )
    name: StrictStr | None = Field(default=None, min_length=1, description="a security group by name")
    tags: SelectorTags | None = Field(
        default=None, description="security groups whose tags all match (`*` matches any value)"
    )

    def problems(self) -> list[tuple[str, str]]:
        if sum(x is not None for x in (self.id, self.name, self.tags)) != 1:
            return [("", "set exactly one of id, name or tags")]
        return _tag_problems(self.tags)


class CapacityReservationTermSpec(Spec):
    """On-Demand Capacity Reservations and Capacity Blocks for ML, by id, or by tags / owner / match criteria."""

    id: ReservationId | None = Field(default=None, description="one reservation by id, alone in its term")
    tags: SelectorTags | None = Field(
        default=None, description="reservations whose tags all match (`*` matches any value)"
    )
    owner_id: AccountId | None = Field(
        default=None, alias="ownerID", description="the account that owns the reservations"
    )
    instance_match_criteria: Literal["open", "targeted"] | None = Field(
        default=None, description="open reservations (any matching instance uses them) or targeted ones"
    )

    def problems(self) -> list[tuple[str, str]]:
        if self.id is not None and (self.tags or self.owner_id or self.instance_match_criteria):
            return [("id", "selects one reservation by itself; leave out tags, ownerID and instanceMatchCriteria")]
        if self.id is None and self.tags is None and self.instance_match_criteria is None:
            return [("", "set id, tags or instanceMatchCriteria")]
        return _tag_problems(self.tags)


class PlacementGroupSpec(Spec):
    """A placement group made outside the stack (a cluster group puts EFA nodes close together), by name or id."""

    name: StrictStr | None = Field(default=None, min_length=1, description="the placement group by name (or `id`)")
    id: PlacementGroupId | None = Field(default=None, description="the placement group by id")

    def problems(self) -> list[tuple[str, str]]:
        return [] if (self.name is None) != (self.id is None) else [("", "set exactly one of name or id")]


class NetworkInterfaceSpec(Spec):
    network_card_index: StrictInt = Field(ge=0, description="the network card the interface is on")
    device_index: StrictInt = Field(ge=0, description="its device index on that card (card 0, device 0 is the primary)")
    interface_type: Literal["interface", "efa-only"] = Field(
        description="`interface`: an ENA interface (the primary must be one); `efa-only`: EFA, taking no IP addresses"
    )


class NodeClassSpec(Spec):
    """One EC2NodeClass: the AMI, volumes, kubelet, network placement and tags of the nodes that use it."""

    preset: StrictStr | None = Field(
        default=None,
        description="the preset to start from (see [Node classes](#node-classes)); the class's fields override it",
    )
    ami_family: Literal["al2023", "bottlerocket"] = Field(
        default="al2023",
        description="the node image; the AL2023 alias picks the NVIDIA or Neuron variant by instance type",
    )
    ami_release: Literal["pinned", "latest"] = Field(
        default="pinned",
        description="`pinned`: the release in `components/versions/`; `latest`: AWS's newest AMI, so every AWS "
        "release drifts every node of the class",
    )
    # gp3 limits (EBS User Guide, "General Purpose SSD volumes"; raised in September 2025 from 16 TiB, 16,000 IOPS and
    # 1,000 MiB/s): 1 GiB-64 TiB, 3,000-80,000 IOPS, 125-2,000 MiB/s, at most 500 IOPS per GiB above the 3,000
    # baseline and 0.25 MiB/s per provisioned IOPS. The size stops at 59000 because the EC2NodeClass schema's
    # volumeSize pattern does; the 20 GiB floor is this platform's, not EC2's.
    root_volume_gib: StrictInt = Field(
        default=80, ge=20, le=59000, description="size of the encrypted gp3 root volume; at least 1 GiB per 500 IOPS"
    )
    root_volume_iops: StrictInt = Field(
        default=3000, ge=3000, le=80000, description="provisioned IOPS of the root volume"
    )
    root_volume_throughput_mibps: StrictInt = Field(
        default=125, ge=125, le=2000, description="throughput of the root volume; at most one MiB/s per 4 IOPS"
    )
    imds_hop_limit: Literal[1, 2] = Field(
        default=1,
        description="IMDSv2 hop limit: 1 keeps instance credentials out of pods' reach; 2 only for workloads that "
        "must read instance metadata",
    )
    instance_store_policy: Literal["RAID0"] | None = Field(
        default=None,
        description="`RAID0`: the instance's local NVMe disks (g5, g6, g6e, p4d, p5 and others) become one array "
        "holding images, logs and pod ephemeral storage, which Karpenter counts as the node's ephemeral storage; the "
        "root volume then holds only the OS, so size it down (100-200 GiB). None: the root volume holds everything",
    )
    kubelet: KubeletSpec | None = Field(
        default=None,
        description=(
            "kubelet settings Karpenter passes to the node and uses in its own capacity maths; none: Karpenter's"
        ),
    )
    user_data: UserDataSpec | None = Field(
        default=None, description="what nodes run at boot beyond what Karpenter configures"
    )
    subnet_selector_terms: tuple[SubnetTermSpec, ...] = Field(
        default=(),
        max_length=30,
        description="the nodes' subnets, replacing the default (those tagged `karpenter.sh/discovery=<cluster>`): "
        "secondary-CIDR subnets, an existing VPC's naming",
    )
    security_group_selector_terms: tuple[SecurityGroupTermSpec, ...] = Field(
        default=(),
        max_length=29,
        description="security groups **added** to the cluster security group (found by the discovery tag), which "
        "nodes always need to reach the control plane",
    )
    capacity_reservation_selector_terms: tuple[CapacityReservationTermSpec, ...] = Field(
        default=(),
        max_length=30,
        description="On-Demand Capacity Reservations and Capacity Blocks for ML the nodes may launch into; lets "
        "pools of the class use `capacityTypes: [reserved]`",
    )
    tags: dict[StrictStr, StrictStr] = Field(
        default_factory=dict,
        description="more instance tags beside the standard tags (whose keys, and those reserved for EKS, Karpenter "
        "and AWS, are refused)",
    )
    detailed_monitoring: StrictBool = Field(
        default=False, description="one-minute CloudWatch metrics for the instances"
    )
    associate_public_ip_address: StrictBool = Field(
        default=False,
        alias="associatePublicIPAddress",
        description="`true` is refused: nodes live in private subnets and reach out through NAT",
    )
    network_interfaces: tuple[NetworkInterfaceSpec, ...] = Field(
        default=(),
        max_length=150,
        description="the exact network interfaces of every instance of the class; empty: Karpenter's",
    )
    efa_layout: StrictStr | None = Field(
        default=None,
        description="an instance type of `components/karpenter/efa.py` (`p5.48xlarge`, `trn1.32xlarge`, ...) whose "
        "recommended EFA layout the class uses instead of `networkInterfaces`: an ENA primary and one EFA-only "
        "interface per network card",
    )
    placement_group_selector: PlacementGroupSpec | None = Field(
        default=None,
        description="a placement group made outside the stack, by `name` or `id` (a cluster group puts EFA nodes "
        "close together)",
    )

    @model_validator(mode="before")
    @classmethod
    def _preset(cls, data: Any) -> Any:
        return apply_preset(data, NODE_CLASS_PRESETS)

    @property
    def interfaces(self) -> list[dict[str, Any]]:
        """The rendered networkInterfaces ([] when the class leaves them to Karpenter)."""
        if self.efa_layout is not None:
            return efa.layout(efa.NETWORK_CARDS[self.efa_layout])
        return [i.model_dump(mode="json", by_alias=True) for i in self.network_interfaces]

    @property
    def efa_interfaces(self) -> int:
        return sum(1 for i in self.interfaces if i["interfaceType"] == "efa-only")

    @model_validator(mode="after")
    def _check(self) -> NodeClassSpec:
        problems = self._volume_problems()
        selector_terms: tuple[
            tuple[str, Sequence[SubnetTermSpec | SecurityGroupTermSpec | CapacityReservationTermSpec]], ...
        ] = (
            ("subnetSelectorTerms", self.subnet_selector_terms),
            ("securityGroupSelectorTerms", self.security_group_selector_terms),
            ("capacityReservationSelectorTerms", self.capacity_reservation_selector_terms),
        )
        for field, terms in selector_terms:
            for index, term in enumerate(terms):
                problems += [
                    (f"{field}[{index}]" + (f".{key}" if key else ""), message) for key, message in term.problems()
                ]
        if self.kubelet is not None:
            problems += [(f"kubelet.{key}", message) for key, message in self.kubelet.problems()]
        if self.placement_group_selector is not None:
            problems += [("placementGroupSelector", message) for _, message in self.placement_group_selector.problems()]
        if self.user_data is not None:
            problems += self.user_data.problems(self.ami_family)
        problems += self._tag_problems()
        if self.associate_public_ip_address:
            problems.append(
                (
                    "associatePublicIPAddress",
                    "nodes get no public addresses: they run in private subnets and reach out through NAT",
                )
            )
        if self.efa_layout is not None and self.network_interfaces:
            problems.append(("efaLayout", "set efaLayout or networkInterfaces, not both"))
        if self.efa_layout is not None and self.efa_layout not in efa.NETWORK_CARDS:
            problems.append(
                (
                    "efaLayout",
                    (
                        f"no known EFA layout for {self.efa_layout!r}; expected one of {', '.join(efa.NETWORK_CARDS)} "
                        "(or list networkInterfaces)"
                    ),
                )
            )
        problems += [
            ("networkInterfaces", p) for p in efa.layout_problems(self.interfaces if self.efa_layout is None else [])
        ]
        if problems:
            raise FieldProblems(problems)
        return self

    def _volume_problems(self) -> list[tuple[str, str]]:
        # EC2 refuses these at launch (InvalidParameterCombination), which Karpenter only reports as a failed
        # NodeClaim: every node of the class fails to start.
        problems = []
        gib, iops, mibps = self.root_volume_gib, self.root_volume_iops, self.root_volume_throughput_mibps
        if iops > max(3000, 500 * gib):
            problems.append(
                (
                    "rootVolumeIops",
                    (
                        f"{iops} IOPS needs rootVolumeGib of at least {-(-iops // 500)} (gp3 allows 500 IOPS per "
                        f"GiB); rootVolumeGib is {gib}"
                    ),
                )
            )
        if mibps * 4 > iops:
            problems.append(
                (
                    "rootVolumeThroughputMibps",
                    (
                        f"{mibps} MiB/s needs rootVolumeIops of at least {mibps * 4} (gp3 allows 0.25 MiB/s per "
                        f"IOPS); rootVolumeIops is {iops}"
                    ),
                )
            )
        return problems

    def _tag_problems(self) -> list[tuple[str, str]]:
        standard = set(standard_tags(project="p", stack="s", owner="o", cost_center="c"))
        problems = []
        for key, value in self.tags.items():
            if key in standard:
                problems.append(
                    (
                        f"tags.{key}",
                        (
                            "is one of the stack's standard tags, which every instance carries already (set owner or "
                            "costCenter)"
                        ),
                    )
                )
            elif key and (crd_rules.tag_problem(key) or key.startswith("aws:")):  # aws: is EC2's own
                problems.append((f"tags.{key}", "is reserved for EKS, Karpenter or AWS"))
            elif not 1 <= len(key) <= 128 or len(value) > 256:
                problems.append((f"tags.{key}", "tag keys take 1 to 128 characters and values at most 256"))
        return problems


__all__ = [
    "CapacityReservationTermSpec",
    "NetworkInterfaceSpec",
    "NodeClassSpec",
    "PlacementGroupSpec",
    "SecurityGroupTermSpec",
    "SubnetTermSpec",
]
