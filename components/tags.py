"""The standard tags every AWS object of the platform carries, and stack-scoped physical names."""

from __future__ import annotations

import re

MANAGED_BY = "pulumi"


def standard_tags(*, project: str, stack: str, owner: str, cost_center: str | None = None) -> dict[str, str]:
    """Tags for cost allocation and ownership.

    Applied through the AWS provider's default tags, and explicitly where Pulumi does not create the object itself
    (Karpenter's EC2NodeClass `tags`, load balancer annotations).
    """
    tags = {"project": project, "stack": stack, "managed-by": MANAGED_BY, "owner": owner}
    if cost_center is not None:
        tags["cost-center"] = cost_center
    return tags


_PHYSICAL_NAME = re.compile(r"^[a-z0-9]([a-z0-9-]*[a-z0-9])?$")


def physical_name(*parts: str, max_length: int) -> str:
    """A stack-prefixed physical name for AWS objects that something else must reference by name.

    Everything else uses Pulumi's autonaming. Raises ValueError rather than truncating, because a truncated name
    can collide with another stack's.
    """
    name = "-".join(parts)
    if not _PHYSICAL_NAME.match(name):
        raise ValueError(f"{name!r} is not a valid name: use lowercase letters, digits and '-'")
    if len(name) > max_length:
        raise ValueError(f"{name!r} is {len(name)} characters long; at most {max_length} are allowed")
    return name
