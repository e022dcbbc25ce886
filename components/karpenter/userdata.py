"""EC2NodeClass `userData` from typed settings (pure), in the format each AMI family takes and Karpenter merges:

- AL2023: a MIME multi-part document with one `application/node.eks.aws` part holding a `NodeConfig`. nodeadm merges
  the NodeConfig parts in order and Karpenter appends its own (cluster, kubelet, labels, taints) after ours, so
  ours can only add to what Karpenter sets (karpenter.sh docs, "AL2023 UserData"; amazon-eks-ami nodeadm
  doc/examples.md, "Merging multiple configuration objects").
- Bottlerocket: TOML settings; Karpenter parses them and overrides the keys it owns (cluster, labels, taints,
  kubelet) with its own.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

import yaml

NODECONFIG_API = "node.eks.aws/v1alpha1"
MIME_BOUNDARY = "//"
#: The containerd 2 (config version 3) CRI images plugin, which owns image pulls on the AL2023 AMIs of Kubernetes
#: 1.33 and later (nodeadm internal/containerd/config2.template.toml).
CONTAINERD_IMAGES_PLUGIN = "plugins.'io.containerd.cri.v1.images'"
#: nodeadm's feature gate for SOCI parallel pull and unpack: layers are fetched and unpacked concurrently, which
#: shortens pulls of multi-GB CUDA images. nodeadm ignores a gate it does not know, so the name must be exact:
#: awslabs/amazon-eks-ami nodeadm/internal/api (`FastImagePull`, beside `InstanceIdNodeName`, the only other gate).
FAST_IMAGE_PULL_GATE = "FastImagePull"


def containerd_config(max_concurrent_downloads: int) -> str:
    return f"[{CONTAINERD_IMAGES_PLUGIN}]\nmax_concurrent_downloads = {max_concurrent_downloads}\n"


class _Dumper(yaml.SafeDumper):
    """Multi-line strings (containerd TOML) as literal blocks, readable in the rendered user data."""


_Dumper.add_representer(
    str,
    lambda dumper, text: dumper.represent_scalar("tag:yaml.org,2002:str", text, style="|" if "\n" in text else None),
)


def al2023_user_data(spec: Mapping[str, Any]) -> str:
    """A NodeConfig with `spec`, as the MIME part nodeadm reads from user data."""
    node_config = {"apiVersion": NODECONFIG_API, "kind": "NodeConfig", "spec": dict(spec)}
    body = yaml.dump(node_config, Dumper=_Dumper, sort_keys=True)
    return (
        "MIME-Version: 1.0\n"
        f'Content-Type: multipart/mixed; boundary="{MIME_BOUNDARY}"\n\n'
        f"--{MIME_BOUNDARY}\n"
        "Content-Type: application/node.eks.aws\n\n"
        f"{body}\n"
        f"--{MIME_BOUNDARY}--\n"
    )


_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


def _key(key: str) -> str:
    return key if _BARE_KEY.fullmatch(key) else json.dumps(key)


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)  # a TOML basic string: the same escapes as JSON for what settings hold
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_value(item) for item in value) + "]"
    raise TypeError(f"no TOML form for {type(value).__name__}")


def toml(tables: Mapping[str, Any], prefix: tuple[str, ...] = ()) -> str:
    """Nested mappings of scalars and lists as TOML tables, keys sorted so diffs stay quiet."""
    scalars = {k: v for k, v in sorted(tables.items()) if not isinstance(v, Mapping)}
    nested = {k: v for k, v in sorted(tables.items()) if isinstance(v, Mapping)}
    text = ""
    if prefix and scalars:
        text += "[" + ".".join(_key(p) for p in prefix) + "]\n"
        text += "".join(f"{_key(k)} = {_value(v)}\n" for k, v in scalars.items()) + "\n"
    for key, value in nested.items():
        text += toml(value, (*prefix, key))
    return text


def bottlerocket_user_data(settings: Mapping[str, Any]) -> str:
    return toml({"settings": dict(settings)}).rstrip("\n") + "\n"
