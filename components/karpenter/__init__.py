"""Karpenter: controller, interruption handling, and the NodePools and EC2NodeClasses (specs, presets, render)."""

from .._lazy import lazy_exports

__getattr__ = lazy_exports(__name__, {"Karpenter": "component", "KarpenterArgs": "component"})
