"""EKS ML platform components: typed Pulumi ComponentResources for an ML platform on AWS EKS.

Import what you need into your own Pulumi program; nothing is created at import time, and a part's module is loaded
only when one of its names is first used (so config models and renderers load no resource code). Type checkers and
editors read the same names from the `TYPE_CHECKING` block below, so `from components import Cluster` is the class.
"""

from typing import TYPE_CHECKING

from ._lazy import lazy_exports

_EXPORTS = {
    "AddOn": "cluster.add_on",
    "AddOnArgs": "cluster.add_on_part",
    "AddOnPart": "cluster.add_on_part",
    "CertManager": "certmanager.component",
    "CertManagerArgs": "certmanager.component",
    "Cluster": "cluster.component",
    "ClusterArgs": "cluster.args",
    "ClusterHandle": "cluster.handle",
    "GpuStack": "gpu.component",
    "GpuStackArgs": "gpu.component",
    "Ingress": "ingress.component",
    "IngressArgs": "ingress.component",
    "WorkloadRole": "identity.roles",
    "WorkloadRoleArgs": "identity.roles",
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
#: Names kept for code written against an earlier release; each warns (DeprecationWarning) when used.
_DEPRECATED = {"IrsaRole": "identity.roles", "IrsaRoleArgs": "identity.roles"}
__all__ = sorted(_EXPORTS)
__getattr__ = lazy_exports(__name__, {**_EXPORTS, **_DEPRECATED})

if TYPE_CHECKING:  # never run: the same names as _EXPORTS (a test holds them together), `X as X` re-exports them
    from .certmanager.component import CertManager as CertManager
    from .certmanager.component import CertManagerArgs as CertManagerArgs
    from .cluster.add_on import AddOn as AddOn
    from .cluster.add_on_part import AddOnArgs as AddOnArgs
    from .cluster.add_on_part import AddOnPart as AddOnPart
    from .cluster.args import ClusterArgs as ClusterArgs
    from .cluster.component import Cluster as Cluster
    from .cluster.handle import ClusterHandle as ClusterHandle
    from .gpu.component import GpuStack as GpuStack
    from .gpu.component import GpuStackArgs as GpuStackArgs
    from .gpu.devices import NodeDevices as NodeDevices
    from .gpu.devices import NodeDevicesArgs as NodeDevicesArgs
    from .identity.roles import WorkloadRole as WorkloadRole
    from .identity.roles import WorkloadRoleArgs as WorkloadRoleArgs
    from .ingress.component import Ingress as Ingress
    from .ingress.component import IngressArgs as IngressArgs
    from .karpenter.component import Karpenter as Karpenter
    from .karpenter.component import KarpenterArgs as KarpenterArgs
    from .kserve.component import KServe as KServe
    from .kserve.component import KServeArgs as KServeArgs
    from .kserve.publish import ModelRoute as ModelRoute
    from .kserve.publish import ModelRouteArgs as ModelRouteArgs
    from .kserve.route import ModelRouteSpec as ModelRouteSpec
    from .kubeflow.component import Kubeflow as Kubeflow
    from .kubeflow.component import KubeflowArgs as KubeflowArgs
    from .kueue.component import Kueue as Kueue
    from .kueue.component import KueueArgs as KueueArgs
    from .kueue.component import TeamQueues as TeamQueues
    from .kueue.component import TeamQueuesArgs as TeamQueuesArgs
    from .network.component import Network as Network
    from .network.component import NetworkArgs as NetworkArgs
    from .observability.component import Observability as Observability
    from .observability.component import ObservabilityArgs as ObservabilityArgs
    from .storage.component import Storage as Storage
    from .storage.component import StorageArgs as StorageArgs
    from .storage.file_system import FsxFileSystem as FsxFileSystem
    from .storage.file_system import FsxFileSystemArgs as FsxFileSystemArgs
    from .team.component import TeamArgs as TeamArgs
    from .team.component import TeamIdentity as TeamIdentity
    from .team.component import TeamIdentityArgs as TeamIdentityArgs
    from .team.component import TeamNamespace as TeamNamespace
    from .team.component import TeamNodePool as TeamNodePool
    from .team.component import TeamProfile as TeamProfile
    from .team.component import TeamProfileArgs as TeamProfileArgs
