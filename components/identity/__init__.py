"""IAM documents and the role every workload that calls AWS uses (IRSA or EKS Pod Identity)."""

from .._lazy import lazy_exports

__getattr__ = lazy_exports(
    __name__, dict.fromkeys(("WorkloadRole", "WorkloadRoleArgs", "IrsaRole", "IrsaRoleArgs"), "roles")
)
