"""kube-prometheus-stack, DCGM and Karpenter scraping, GPU dashboards and alerts."""

from .._lazy import lazy_exports

__getattr__ = lazy_exports(__name__, {"Observability": "component", "ObservabilityArgs": "component"})
