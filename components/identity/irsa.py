"""Deprecated (0.5): the workload and node roles moved to `identity.roles`, since the workload role is an EKS Pod
Identity role as often as an IRSA one. Each name still resolves, with a DeprecationWarning naming its new module."""

from .._lazy import moved_exports

__getattr__ = moved_exports(
    __name__,
    dict.fromkeys(
        (
            "FORMER_TYPE",
            "IRSA_ANNOTATION",
            "IrsaRole",
            "IrsaRoleArgs",
            "NODE_MANAGED_POLICIES",
            "PodIdentityTarget",
            "TYPE",
            "WorkloadRole",
            "WorkloadRoleArgs",
            "aws_managed_policy_arn",
            "node_role",
        ),
        "roles",
    ),
)
