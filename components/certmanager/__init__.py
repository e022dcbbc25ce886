"""cert-manager, installed once by the platform for every part that needs certificates."""

from .._lazy import lazy_exports

__getattr__ = lazy_exports(
    __name__, {"CertManager": "component", "CertManagerArgs": "component", "NAMESPACE": "names", "GROUPS": "names"}
)
