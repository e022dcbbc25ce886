"""The counters the DCGM exporter collects, as the platform configures it (pure).

Given no counter list, the GPU Operator runs the exporter with its `dcp-metrics-included.csv` (GPU Operator v26.7.0,
`assets/state-dcgm-exporter`), which has the last XID but no ECC or NVLink error counters. The platform gives it
this list instead (`dcgmExporter.config`): those defaults, so no dashboard loses a series, plus the health counters
its alerts read. Field names are DCGM's, as dcgm-exporter 4.8.2 lists them in `etc/default-counters.csv` (most of the
health ones commented out there); the tests hold every name here to that file.

The exporter runs its own embedded host engine beside the node monitoring agent's `dcgm-server`; why the two do not
contend for the profiling (`DCGM_FI_PROF_*`) fields as shipped, and what would make them, is in docs/gpu.md ("Two
DCGM host engines").
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

#: The ConfigMap the operator creates from `DCGM_COUNTERS`, and the key the exporter reads (the chart's contract).
CONFIG_NAME = "dcgm-exporter-counters"

#: What the exporter collects with the GPU Operator's default list: field -> Prometheus type.
OPERATOR_DEFAULT_COUNTERS: Mapping[str, str] = MappingProxyType(
    {
        "DCGM_FI_DEV_SM_CLOCK": "gauge",
        "DCGM_FI_DEV_MEM_CLOCK": "gauge",
        "DCGM_FI_DEV_MEMORY_TEMP": "gauge",
        "DCGM_FI_DEV_GPU_TEMP": "gauge",
        "DCGM_FI_DEV_POWER_USAGE": "gauge",
        "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION": "counter",
        "DCGM_FI_DEV_PCIE_REPLAY_COUNTER": "counter",
        "DCGM_FI_DEV_GPU_UTIL": "gauge",
        "DCGM_FI_DEV_MEM_COPY_UTIL": "gauge",
        "DCGM_FI_DEV_ENC_UTIL": "gauge",
        "DCGM_FI_DEV_DEC_UTIL": "gauge",
        "DCGM_FI_DEV_XID_ERRORS": "gauge",
        "DCGM_FI_DEV_FB_FREE": "gauge",
        "DCGM_FI_DEV_FB_USED": "gauge",
        "DCGM_FI_DEV_FB_RESERVED": "gauge",
        "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL": "counter",
        "DCGM_FI_DEV_VGPU_LICENSE_STATUS": "gauge",
        "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS": "counter",
        "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS": "counter",
        "DCGM_FI_DEV_ROW_REMAP_FAILURE": "gauge",
        "DCGM_FI_DRIVER_VERSION": "label",
        "DCGM_FI_PROF_GR_ENGINE_ACTIVE": "gauge",
        "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE": "gauge",
        "DCGM_FI_PROF_DRAM_ACTIVE": "gauge",
        "DCGM_FI_PROF_PCIE_TX_BYTES": "gauge",
        "DCGM_FI_PROF_PCIE_RX_BYTES": "gauge",
    }
)

#: The health counters the platform adds for its alerts: field -> Prometheus type.
HEALTH_COUNTERS: Mapping[str, str] = MappingProxyType(
    {
        # Uncorrectable (double-bit) ECC errors since the driver loaded.
        "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL": "counter",
        # NVLink data CRC errors and link recoveries: a link that corrupts or drops traffic.
        "DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL": "counter",
        "DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL": "counter",
    }
)

DCGM_COUNTERS: Mapping[str, str] = MappingProxyType({**OPERATOR_DEFAULT_COUNTERS, **HEALTH_COUNTERS})


def counters_csv(counters: Mapping[str, str] = DCGM_COUNTERS) -> str:
    """The exporter's counter list: one `field, type, help` line per counter (the help is the field's name)."""
    return "\n".join(f"{field}, {kind}, {field}" for field, kind in counters.items()) + "\n"


def exporter_config() -> dict[str, object]:
    """The GPU Operator chart's `dcgmExporter.config`: a ConfigMap it makes from the list, for the exporter."""
    return {"name": CONFIG_NAME, "create": True, "data": counters_csv()}
