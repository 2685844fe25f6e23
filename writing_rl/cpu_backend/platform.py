"""verl's platform for a machine without an accelerator: every "device" is the CPU, the collective backend gloo.

verl asks its platform (``verl.plugin.platform``) for the device name, the ``torch.<device>`` module, the
collective backend and the Ray resource its workers ask for. Ray still counts logical GPUs, one per training
process (``ray_kwargs.ray_init.num_gpus``, set by ``+backend=cpu``): docs/train-on-a-laptop.md.
"""

from __future__ import annotations

import contextlib
import types
from typing import Any

import torch
from verl.plugin.platform import PlatformBase, PlatformRegistry

from writing_rl.cpu_backend.platform_name import PLATFORM


def _device_module() -> types.ModuleType:
    """``torch.cpu`` plus the calls verl makes on a device module that ``torch.cpu`` lacks (cache and
    memory statistics, RNG state, IPC collection): nothing to free, no device memory to count."""
    module = types.ModuleType("writing_rl_cpu_device")
    for name in dir(torch.cpu):
        if not name.startswith("_"):
            setattr(module, name, getattr(torch.cpu, name))
    module.current_device = lambda: PLATFORM  # verl moves tensors with .to(current_device())
    module.device_count = lambda: 1
    module.set_device = lambda device=None: None
    module.is_available = lambda: True
    module.empty_cache = lambda: None
    module.ipc_collect = lambda: None
    module.set_per_process_memory_fraction = lambda fraction, device=None: None
    module.get_rng_state = lambda device=None: torch.get_rng_state()
    module.set_rng_state = lambda state, device=None: torch.set_rng_state(state)
    module.manual_seed = torch.manual_seed
    module.manual_seed_all = torch.manual_seed
    module.mem_get_info = _mem_get_info
    module.get_device_name = lambda device=None: "cpu"
    for name in ("memory_allocated", "memory_reserved", "max_memory_allocated", "max_memory_reserved"):
        setattr(module, name, lambda device=None: 0)
    module.reset_peak_memory_stats = lambda device=None: None
    return module


def _mem_get_info(device=None) -> tuple[int, int]:
    """(free, total) bytes of host memory, as ``torch.cuda.mem_get_info`` reports a GPU's."""
    import psutil

    memory = psutil.virtual_memory()
    return memory.available, memory.total


DEVICE_MODULE = _device_module()


@PlatformRegistry.register(platform=PLATFORM)
class PlatformCPU(PlatformBase):
    @property
    def device_name(self) -> str:
        return PLATFORM

    @property
    def vendor_name(self) -> str:
        return "cpu"

    @property
    def device_module(self) -> types.ModuleType:
        return DEVICE_MODULE

    def is_available(self) -> bool:
        return True

    def is_platform_available(self, use_smi_check: bool = False) -> bool:
        # Never auto-detected: a machine with GPUs must not fall back to this. VERL_PLATFORM=cpu selects it.
        return False

    def current_device(self) -> str:
        return PLATFORM

    def device_count(self) -> int:
        return 1

    def set_device(self, device_index) -> None:
        return None

    def synchronize(self, device_index=None) -> None:
        return None

    def manual_seed(self, seed: int) -> None:
        torch.manual_seed(seed)

    def manual_seed_all(self, seed: int) -> None:
        torch.manual_seed(seed)

    def set_allocator_settings(self, settings: str) -> None:
        return None

    def empty_cache(self) -> None:
        return None

    def get_device_capability(self, device_index: int = 0) -> tuple[None, None]:
        return None, None

    def communication_backend_name(self) -> str:
        return "gloo"

    def visible_devices_envvar(self) -> str:
        # Ray sets it for actors that hold a logical GPU; nothing here reads it.
        return "CUDA_VISIBLE_DEVICES"

    @contextlib.contextmanager
    def nvtx_range(self, msg: str):
        yield

    def profiler_start(self) -> None:
        return None

    def profiler_stop(self) -> None:
        return None

    def ray_resource_name(self) -> str:
        return "GPU"

    def ray_noset_envvars(self) -> list[str]:
        return []

    def is_ipc_supported(self) -> bool:
        return False

    def cudart(self) -> Any:
        return None
