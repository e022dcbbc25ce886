"""EKS ML platform components: typed Pulumi ComponentResources for an ML platform on AWS EKS.

Import what you need into your own Pulumi program; nothing is created at import time, and a part's module is loaded
only when one of its names is first used (so config models and renderers load no resource code). Type checkers and
editors read the same names from the `TYPE_CHECKING` block below, so `from components import Cluster` is the class.
"""

from typing import TYPE_CHECKING

from components._lazy import lazy_exports

_EXPORTS = {
    "CertManager": "certmanager.component",
    "CertManagerArgs": "certmanager.component",
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
    "Kubeflow": "kubeflow.component",
    "KubeflowArgs": "kubeflow.component",
    "KServe": "kserve.component",
    "KServeArgs": "kserve.component",
    "Kueue": "kueue.component",
    "KueueArgs": "kueue.component",
    "ModelRoute": "kserve.publish",
    "ModelRouteArgs": "kserve.publish",
    "ModelRouteSpec": "kserve.route",
    "Network": "network.component",
    "NetworkArgs": "network.component",
    "NodeDevices": "gpu.devices",
    "NodeDevicesArgs": "gpu.devices",
    "Observability": "observability.component",
    "ObservabilityArgs": "observability.component",
    "Storage": "storage.component",
    "StorageArgs": "storage.component",
    "FsxFileSystem": "storage.file_system",
    "FsxFileSystemArgs": "storage.file_system",
    "TeamArgs": "team.component",
    "TeamIdentity": "team.component",
    "TeamIdentityArgs": "team.component",
    "TeamNamespace": "team.component",
    "TeamNodePool": "team.component",
    "TeamProfile": "team.component",
    "TeamProfileArgs": "team.component",
    "TeamQueues": "kueue.component",
    "TeamQueuesArgs": "kueue.component",
}
__all__ = sorted(_EXPORTS)
__getattr__ = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:  # never run: the same names as _EXPORTS (a test holds them together), `X as X` re-exports them
    from components.certmanager.component import CertManager as CertManager
    from components.certmanager.component import CertManagerArgs as CertManagerArgs
    from components.cluster.component import Cluster as Cluster
    from components.cluster.component import ClusterArgs as ClusterArgs
    from components.cluster.handle import ClusterHandle as ClusterHandle
    from components.gpu.component import GpuStack as GpuStack
    from components.gpu.component import GpuStackArgs as GpuStackArgs
    from components.gpu.devices import NodeDevices as NodeDevices
    from components.gpu.devices import NodeDevicesArgs as NodeDevicesArgs
    from components.identity.irsa import IrsaRole as IrsaRole
    from components.identity.irsa import IrsaRoleArgs as IrsaRoleArgs
    from components.ingress.component import Ingress as Ingress
    from components.ingress.component import IngressArgs as IngressArgs
    from components.karpenter.component import Karpenter as Karpenter
    from components.karpenter.component import KarpenterArgs as KarpenterArgs
    from components.kserve.component import KServe as KServe
    from components.kserve.component import KServeArgs as KServeArgs
    from components.kserve.publish import ModelRoute as ModelRoute
    from components.kserve.publish import ModelRouteArgs as ModelRouteArgs
    from components.kserve.route import ModelRouteSpec as ModelRouteSpec
    from components.kubeflow.component import Kubeflow as Kubeflow
    from components.kubeflow.component import KubeflowArgs as KubeflowArgs
    from components.kueue.component import Kueue as Kueue
    from components.kueue.component import KueueArgs as KueueArgs
    from components.kueue.component import TeamQueues as TeamQueues
    from components.kueue.component import TeamQueuesArgs as TeamQueuesArgs
    from components.network.component import Network as Network
    from components.network.component import NetworkArgs as NetworkArgs
    from components.observability.component import Observability as Observability
    from components.observability.component import ObservabilityArgs as ObservabilityArgs
    from components.storage.component import Storage as Storage
    from components.storage.component import StorageArgs as StorageArgs
    from components.storage.file_system import FsxFileSystem as FsxFileSystem
    from components.storage.file_system import FsxFileSystemArgs as FsxFileSystemArgs
    from components.team.component import TeamArgs as TeamArgs
    from components.team.component import TeamIdentity as TeamIdentity
    from components.team.component import TeamIdentityArgs as TeamIdentityArgs
    from components.team.component import TeamNamespace as TeamNamespace
    from components.team.component import TeamNodePool as TeamNodePool
    from components.team.component import TeamProfile as TeamProfile
    from components.team.component import TeamProfileArgs as TeamProfileArgs
