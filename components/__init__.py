"""EKS ML platform components: typed Pulumi ComponentResources for an ML platform on AWS EKS.

Import what you need into your own Pulumi program; nothing is created at import time.
"""

from components.cluster.component import Cluster, ClusterArgs, ClusterHandle
from components.gpu.component import GpuStack, GpuStackArgs
from components.identity.irsa import IrsaRole, IrsaRoleArgs
from components.ingress.component import Ingress, IngressArgs
from components.karpenter.component import Karpenter, KarpenterArgs
from components.network.component import Network, NetworkArgs
from components.observability.component import Observability, ObservabilityArgs
from components.storage.component import Storage, StorageArgs

__all__ = [
    "Cluster",
    "ClusterArgs",
    "ClusterHandle",
    "GpuStack",
    "GpuStackArgs",
    "Ingress",
    "IngressArgs",
    "IrsaRole",
    "IrsaRoleArgs",
    "Karpenter",
    "KarpenterArgs",
    "Network",
    "NetworkArgs",
    "Observability",
    "ObservabilityArgs",
    "Storage",
    "StorageArgs",
]
