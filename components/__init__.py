"""EKS ML platform components: typed Pulumi ComponentResources for an ML platform on AWS EKS.

Import what you need into your own Pulumi program; nothing is created at import time.
"""

from .cluster import Cluster, ClusterArgs, ClusterHandle
from .gpu import GpuStack, GpuStackArgs
from .iam import IrsaRole, IrsaRoleArgs
from .ingress import Ingress, IngressArgs
from .karpenter import Karpenter, KarpenterArgs
from .network import Network, NetworkArgs
from .observability import Observability, ObservabilityArgs
from .storage import Storage, StorageArgs

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
