"""The GPU stack: NVIDIA GPU Operator, the bin-packing scheduler and the GPU admission policy."""

from .._lazy import lazy_exports

__getattr__ = lazy_exports(__name__, {"GpuStack": "component", "GpuStackArgs": "component"})
