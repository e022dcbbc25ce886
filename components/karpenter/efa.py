"""EFA network interface layouts for EC2NodeClass `networkInterfaces` (pure).

An EC2NodeClass with `networkInterfaces` launches every instance with exactly those interfaces, whatever its type
(Karpenter v1.11+), so a layout fits only instance types with at least that many network cards. The layout is the one
AWS recommends ("Maximize network bandwidth on Amazon EC2 instances with multiple network cards",
docs.aws.amazon.com/AWSEC2/latest/UserGuide/efa-acc-inst-types.html, and the EKS user guide's P6-B200 example): an
ENA interface as the primary (card 0, device 0; an EFA-only interface cannot be primary), an EFA-only interface on
device 1 of card 0, and one EFA-only interface (device 0) on every other card. EFA-only interfaces take no IP
addresses, so a p5 node does not drain the subnet of 32 interfaces' worth of warm IPs. Karpenter then counts one
`vpc.amazonaws.com/efa` per EFA-only interface.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any

#: Network cards (each with EFA) per instance type. Sources: the EC2 user guide (P5/P5e: 32 cards; P4d: 4), the EKS
#: user guide (P6-B200: 8), EC2 DescribeInstanceTypes NetworkInfo.MaximumNetworkCards (P5en: 16; Trn1: 8; Trn1n: 16).
NETWORK_CARDS: Mapping[str, int] = MappingProxyType(
    {
        "p4d.24xlarge": 4,
        "p4de.24xlarge": 4,
        "p5.48xlarge": 32,
        "p5e.48xlarge": 32,
        "p5en.48xlarge": 16,
        "p6-b200.48xlarge": 8,
        "trn1.32xlarge": 8,
        "trn1n.32xlarge": 16,
    }
)


def layout(network_cards: int) -> list[dict[str, Any]]:
    """The recommended interfaces of an instance with `network_cards` EFA-capable network cards."""
    interfaces = [
        {"networkCardIndex": 0, "deviceIndex": 0, "interfaceType": "interface"},
        {"networkCardIndex": 0, "deviceIndex": 1, "interfaceType": "efa-only"},
    ]
    interfaces += [
        {"networkCardIndex": card, "deviceIndex": 0, "interfaceType": "efa-only"} for card in range(1, network_cards)
    ]
    return interfaces


def layout_problems(interfaces: Sequence[Mapping[str, Any]]) -> list[str]:
    """What the EC2NodeClass CRD (and EC2) would refuse in a list of interfaces."""
    problems = []
    if interfaces and not any(
        (i["networkCardIndex"], i["deviceIndex"], i["interfaceType"]) == (0, 0, "interface") for i in interfaces
    ):
        problems.append(
            "needs a primary interface: networkCardIndex 0, deviceIndex 0, interfaceType interface (EFA-only "
            "cannot be primary)"
        )
    seen: dict[tuple[int, int], int] = {}
    for index, i in enumerate(interfaces):
        slot = (i["networkCardIndex"], i["deviceIndex"])
        if slot in seen:
            problems.append(f"[{index}] uses networkCardIndex {slot[0]} deviceIndex {slot[1]} like [{seen[slot]}]")
        seen.setdefault(slot, index)
    efa_per_card: dict[int, int] = {}
    for i in interfaces:
        if i["interfaceType"] == "efa-only":
            efa_per_card[i["networkCardIndex"]] = efa_per_card.get(i["networkCardIndex"], 0) + 1
    problems += [
        f"network card {card} has {count} EFA-only interfaces; at most one per card"
        for card, count in sorted(efa_per_card.items())
        if count > 1
    ]
    return problems


def cards_needed(interfaces: Sequence[Mapping[str, Any]]) -> int:
    return max((i["networkCardIndex"] for i in interfaces), default=-1) + 1
