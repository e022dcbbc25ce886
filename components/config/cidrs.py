"""Address ranges in stack config that admit someone: reading a CIDR of either IP family, and the one test every key
that opens something uses to refuse the whole internet, whether in one range or spread over several."""

from __future__ import annotations

from collections.abc import Sequence
from ipaddress import IPv4Network, IPv6Network, collapse_addresses, ip_network
from typing import Any

Network = IPv4Network | IPv6Network
#: The whole address space of each family.
EVERYTHING: tuple[Network, ...] = (IPv4Network("0.0.0.0/0"), IPv6Network("::/0"))


def parse_cidr(value: Any) -> Network:
    """A CIDR of either family, strictly (no host bits), or ValueError saying what was expected."""
    if isinstance(value, IPv4Network | IPv6Network):
        return value
    if not isinstance(value, str):
        raise ValueError(f"expected a CIDR string like '203.0.113.0/24', got {type(value).__name__}")
    try:
        return ip_network(value, strict=True)
    except ValueError as exc:
        raise ValueError(
            f"expected an IPv4 or IPv6 CIDR like '203.0.113.0/24' with no host bits set, got {value!r} ({exc})"
        ) from None


def whole_families(cidrs: Sequence[Network]) -> list[Network]:
    """The families (as their whole range, `0.0.0.0/0` or `::/0`) whose every address these ranges together admit:
    `0.0.0.0/1` with `128.0.0.0/1` is as open as `0.0.0.0/0`."""
    covered = []
    for everything in EVERYTHING:
        family = [c for c in cidrs if c.version == everything.version]
        if everything in collapse_addresses(family):  # type: ignore[type-var]  # one family at a time, as it needs
            covered.append(everything)
    return covered


def whole_internet_problems(key: str, cidrs: Sequence[Network], opens: str, fix: str) -> list[tuple[str, str]]:
    """The problems of `key` if its ranges admit a whole family's addresses: each range that does by itself, under
    its index, else the list when its ranges do together. `opens` says what would be open (`the API server`),
    `fix` what to list instead."""
    alone = [
        (f"{key}[{index}]", f"{cidr} opens {opens} to the whole internet; {fix}")
        for index, cidr in enumerate(cidrs)
        if cidr.prefixlen == 0
    ]
    if alone:
        return alone
    return [
        (
            key,
            (
                f"{', '.join(str(c) for c in cidrs if c.version == everything.version)} together cover "
                f"{everything}, which opens {opens} to the whole internet; {fix}"
            ),
        )
        for everything in whole_families(cidrs)
    ]
