"""Team stacks: what one ML team creates on a platform another stack runs (namespace, identity, NodePool, FSx
claims, Kubeflow Profile), checked against the platform's outputs."""

from .._lazy import lazy_exports

__getattr__ = lazy_exports(
    __name__,
    {
        "TeamArgs": "component",
        "TeamIdentity": "component",
        "TeamIdentityArgs": "component",
        "TeamNamespace": "component",
        "TeamNodePool": "component",
        "TeamProfile": "component",
        "TeamProfileArgs": "component",
    },
)
