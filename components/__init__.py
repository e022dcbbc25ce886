"""EKS ML platform components: typed Pulumi ComponentResources for an ML platform on AWS EKS.

Import what you need into your own Pulumi program; nothing is created at import time, and a part's module is loaded
only when one of its names is first used (so config models and renderers load no resource code).
"""

from components._lazy import lazy_exports

_EXPORTS = {
    "Cluster": "cluster.component",
    "ClusterArgs": "cluster.component",
    "ClusterHandle": "cluster.handle",
    "GpuStack": "gpu.component",
    "GpuStackArgs": "gpu.component",
    "Ingress": "ingress.component",
    "IngressArgs": "ingress.component",
    "IrsaRole": "identity.irsa",
    "IrsaRoleArgs": "identity.irsa",
    "Karpenter": "karpenter.component",
    "KarpenterArgs": "karpenter.component",
    "Network": "network.component",
    "NetworkArgs": "network.component",
    "Observability": "observability.component",
    "ObservabilityArgs": "observability.component",
    "Storage": "storage.component",
    "StorageArgs": "storage.component",
    "TeamArgs": "team.component",
    "TeamIdentity": "team.component",
    "TeamIdentityArgs": "team.component",
    "TeamNamespace": "team.component",
    "TeamNodePool": "team.component",
}
__all__ = sorted(_EXPORTS)
__getattr__ = lazy_exports(__name__, _EXPORTS)
