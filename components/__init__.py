"""EKS ML platform components: typed Pulumi ComponentResources for an ML platform on AWS EKS.

Import what you need into your own Pulumi program; nothing is created at import time.
"""

from .cluster import Cluster, ClusterArgs, ClusterHandle
from .iam import IrsaRole, IrsaRoleArgs
from .network import Network, NetworkArgs

__all__ = ["Cluster", "ClusterArgs", "ClusterHandle", "IrsaRole", "IrsaRoleArgs", "Network", "NetworkArgs"]
