"""Deprecated (0.5): the stack program moved to `components/platform/` (`platform.entry.program`,
`platform.build.build_platform`, ...). Each name still resolves, with a DeprecationWarning naming its new module."""

from ._lazy import moved_exports

__getattr__ = moved_exports(
    __name__,
    {
        "PART_NAMES": "platform.aliases",
        "Platform": "platform.build",
        "adopted_from_part": "platform.aliases",
        "alb_client_secret": "platform.entry",
        "build_platform": "platform.build",
        "connector_secrets": "platform.entry",
        "export_outputs": "platform.outputs",
        "export_team_contract": "platform.outputs",
        "kubeflow_objects": "platform.part_args",
        "load_config": "platform.entry",
        "part_options": "platform.aliases",
        "program": "platform.entry",
        "raw_config": "platform.entry",
    },
)
