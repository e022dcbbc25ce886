"""What every part's config model builds on: the error type that names each problem's key path, the shared field
types and validators. Each part owns its own model; `components.platform.config` gathers them into a stack's."""

from .._lazy import lazy_exports

__getattr__ = lazy_exports(
    __name__,
    {
        "ConfigError": "errors",
        "ConfigIssue": "errors",
        "StatefulResources": "types",
        "Environment": "types",
    },
)
