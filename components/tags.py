"""The standard tags every AWS object of the platform carries, and the tags the platform has controllers put on
what they create."""

from __future__ import annotations

MANAGED_BY = "pulumi"
#: Tag the FSx CSI driver puts on the file systems it creates; its IAM role may only delete those, and the teardown
#: sweep finds them by it.
DYNAMIC_FSX_TAG = "eksml.io/fsx-csi-cluster"


def standard_tags(*, project: str, stack: str, owner: str, cost_center: str | None = None) -> dict[str, str]:
    """Tags for cost allocation and ownership.

    Applied through the AWS provider's default tags, and explicitly where Pulumi does not create the object itself
    (Karpenter's EC2NodeClass `tags`, load balancer annotations).
    """
    tags = {"project": project, "stack": stack, "managed-by": MANAGED_BY, "owner": owner}
    if cost_center is not None:
        tags["cost-center"] = cost_center
    return tags
