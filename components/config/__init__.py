"""Stack configuration: parsed once, at the edge, into frozen typed models (each part owns its own model)."""

from components._lazy import lazy_exports

__getattr__ = lazy_exports(
    __name__,
    {
        "PlatformConfig": "platform",
        "parse_config": "platform",
        "ConfigError": "errors",
        "ConfigIssue": "errors",
        "StatefulResources": "types",
        "Environment": "types",
    },
)
