"""KServe, model serving for Kubeflow: its pinned charts in Standard (raw Deployment) mode, the controller on the
system nodes; and `ModelRoute`, which publishes one InferenceService on the Kubeflow gateway."""

from .._lazy import lazy_exports

__getattr__ = lazy_exports(
    __name__,
    {
        "KServe": "component",
        "KServeArgs": "component",
        "ModelRoute": "publish",
        "ModelRouteArgs": "publish",
        "ModelRouteSpec": "route",
        "NAMESPACE": "values",
        "chart_values": "values",
    },
)
