"""EKS with its add-ons, access entries and the system node group; the handle other parts take; its sizing."""

from .._lazy import lazy_exports

__getattr__ = lazy_exports(__name__, {"Cluster": "component", "ClusterArgs": "args", "ClusterHandle": "handle"})
