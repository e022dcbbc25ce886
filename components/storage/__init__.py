"""Storage: S3 buckets, FSx for Lustre with its data repository and CSI driver, and the gp3 classes."""

from .._lazy import lazy_exports

__getattr__ = lazy_exports(
    __name__,
    {
        "Storage": "component",
        "StorageArgs": "component",
        "FsxFileSystem": "file_system",
        "FsxFileSystemArgs": "file_system",
    },
)
