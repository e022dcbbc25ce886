"""What an EC2NodeClass's nodes run at boot beyond what Karpenter configures (`UserDataSpec`), and what each node
image (AL2023's nodeadm, Bottlerocket's settings) takes of it."""

from __future__ import annotations

from typing import Any

from pydantic import Field, StrictBool, StrictInt, StrictStr

from .spec_types import Spec

#: Bottlerocket settings Karpenter writes itself (cluster identity, labels, taints) or derives from `kubelet`, which
#: must be set there so Karpenter's capacity maths agree with the node.
_BOTTLEROCKET_OWNED = {
    **{
        f"kubernetes.{k}": "Karpenter sets it from the cluster and the NodePool"
        for k in ("cluster-name", "api-server", "cluster-certificate", "cluster-dns-ip", "node-labels", "node-taints")
    },
    **{
        f"kubernetes.{k}": "set it in the class's kubelet, which Karpenter also counts with"
        for k in (
            "max-pods",
            "kube-reserved",
            "system-reserved",
            "eviction-hard",
            "eviction-soft",
            "eviction-soft-grace-period",
            "image-gc-high-threshold-percent",
            "image-gc-low-threshold-percent",
            "cpu-cfs-quota-enforced",
        )
    },
}
#: NodeConfig spec keys the user data may set: containerd, instance options and nodeadm feature gates. `cluster` is
#: Karpenter's, `kubelet` goes through the class's kubelet, and local storage through instanceStorePolicy.
_NODECONFIG_KEYS = {"containerd", "featureGates", "instance"}


class UserDataSpec(Spec):
    """What nodes run at boot, beyond what Karpenter configures. `maxConcurrentDownloads` works on both AMI
    families; `parallelImagePull` and `nodeConfig` are AL2023's (nodeadm), `settings` Bottlerocket's."""

    max_concurrent_downloads: StrictInt | None = Field(
        default=None,
        ge=1,
        le=64,
        description="parallel layer downloads per image pull (containerd on AL2023, `settings.container-runtime` on "
        "Bottlerocket)",
    )
    parallel_image_pull: StrictBool = Field(
        default=False,
        description="AL2023: SOCI parallel pull and unpack (nodeadm's `FastImagePull` feature gate), much faster for "
        "multi-GB CUDA images",
    )
    node_config: dict[StrictStr, Any] | None = Field(
        default=None,
        description="AL2023: more of nodeadm's `NodeConfig` spec (`containerd`, `instance`, `featureGates`), merged "
        "before Karpenter's own; `cluster` and `kubelet` are Karpenter's and refused",
    )
    settings: dict[StrictStr, Any] | None = Field(
        default=None,
        description="Bottlerocket: TOML settings (e.g. `kernel.sysctl`); those Karpenter owns (cluster, labels, "
        "taints, kubelet) are refused",
    )

    def problems(self, ami_family: str) -> list[tuple[str, str]]:
        """What the node image of `ami_family` (`al2023` or `bottlerocket`) would refuse or Karpenter overrides, by
        key path within the class."""
        if ami_family == "bottlerocket":
            return self._bottlerocket_problems()
        return self._al2023_problems()

    def _bottlerocket_problems(self) -> list[tuple[str, str]]:
        """Bottlerocket takes `settings` (those Karpenter owns refused), not nodeadm's fields."""
        problems = []
        if self.parallel_image_pull:
            problems.append(
                (
                    "userData.parallelImagePull",
                    "is nodeadm's (AL2023); on Bottlerocket set the SOCI snapshotter under userData.settings",
                )
            )
        if self.node_config is not None:
            problems.append(
                (
                    "userData.nodeConfig",
                    "is a NodeConfig for AL2023's nodeadm; Bottlerocket takes userData.settings",
                )
            )
        for path, value in _leaves(self.settings or {}):
            if path in _BOTTLEROCKET_OWNED:
                problems.append((f"userData.settings.{path}", _BOTTLEROCKET_OWNED[path]))
            elif not _toml_value(value):
                problems.append(
                    (
                        f"userData.settings.{path}",
                        f"expected a string, number, boolean or a list of them, got {value!r}",
                    )
                )
        return problems

    def _al2023_problems(self) -> list[tuple[str, str]]:
        """AL2023's nodeadm takes `nodeConfig` (what Karpenter or the class sets refused), not `settings`."""
        problems = []
        if self.settings is not None:
            problems.append(("userData.settings", "are Bottlerocket's TOML settings; AL2023 takes userData.nodeConfig"))
        for key in self.node_config or {}:
            if key not in _NODECONFIG_KEYS:
                why = {
                    "cluster": "Karpenter sets it from the cluster",
                    "kubelet": (
                        "set the class's kubelet instead: Karpenter merges it into the NodeConfig and counts with it"
                    ),
                }.get(key, f"expected {', '.join(sorted(_NODECONFIG_KEYS))}")
                problems.append((f"userData.nodeConfig.{key}", why))
        local_storage = (self.node_config or {}).get("instance") or {}
        if isinstance(local_storage, dict) and "localStorage" in local_storage:
            problems.append(
                (
                    "userData.nodeConfig.instance.localStorage",
                    (
                        "set instanceStorePolicy: RAID0 instead, which Karpenter also counts as the node's ephemeral "
                        "storage"
                    ),
                )
            )
        containerd = (self.node_config or {}).get("containerd") or {}
        if self.max_concurrent_downloads is not None and isinstance(containerd, dict) and "config" in containerd:
            problems.append(
                (
                    "userData.maxConcurrentDownloads",
                    "set max_concurrent_downloads in your own nodeConfig.containerd.config instead",
                )
            )
        return problems


def _leaves(tree: dict[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    """(dotted path, value) of every setting that is not a table, and of every table Karpenter owns."""
    found = []
    for key, value in tree.items():
        path = f"{prefix}{key}"
        if isinstance(value, dict) and value and path not in _BOTTLEROCKET_OWNED:
            found += _leaves(value, path + ".")
        else:
            found.append((path, value))
    return found


def _toml_value(value: Any) -> bool:
    scalar = (str, int, float, bool)
    return isinstance(value, scalar) or (isinstance(value, list) and all(isinstance(v, scalar) for v in value))


__all__ = ["UserDataSpec"]
