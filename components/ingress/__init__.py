"""The AWS Load Balancer Controller."""

from .._lazy import lazy_exports

__getattr__ = lazy_exports(__name__, {"Ingress": "component", "IngressArgs": "component"})
