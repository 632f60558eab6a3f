"""The device registry: ``Hardware`` objects and the original description's
constants (``from roofline.hardware_registry import BLACKWELL_B10``).

Every figure comes from the C++ core's data files, with its source in
``Hardware.data`` (``roofline hardware show ID``).
"""

from . import _roofline as _core


class Hardware:
    """One device: id, name, bandwidth, memory and dense peaks per format.

    ``data`` is the whole record with each figure's source and confidence.
    Any function taking ``hardware`` accepts a Hardware or an id.
    """

    def __init__(self, data):
        self.data = data
        self.id = data["id"]
        self.name = data["name"]
        self.bandwidth_Bps = data["bandwidth_Bps"]
        self.memory_bytes = data["memory"]["capacity_bytes"]["value"]
        self.peaks = {k: v["value"] for k, v in data["peaks"].items()}
        self.tensor_formats = data["tensor_formats"]

    def __repr__(self):
        return f"Hardware({self.id!r}, {self.bandwidth_Bps / 1e9:.0f} GB/s)"


def get_hardware(alias):
    """The device with this id or alias ("b10", "h100", "4090", ...)."""
    return Hardware(_core.hardware(alias))


def hardware_ids():
    """Every device id."""
    return _core.hardware_ids()


# The original description's constants, and one per device of the registry.
BLACKWELL_B10 = get_hardware("gb10")
GB10 = BLACKWELL_B10
B200 = get_hardware("b200")
GB200 = get_hardware("gb200")
B300 = get_hardware("b300")
H100_SXM = get_hardware("h100-sxm")
H100 = H100_SXM
H100_PCIE = get_hardware("h100-pcie")
H200 = get_hardware("h200")
H20 = get_hardware("h20")
A100_80GB = get_hardware("a100-80gb")
A100 = A100_80GB
A100_40GB = get_hardware("a100-40gb")
L40S = get_hardware("l40s")
L4 = get_hardware("l4")
RTX_4090 = get_hardware("rtx-4090")
RTX_5090 = get_hardware("rtx-5090")
RTX_PRO_6000 = get_hardware("rtx-pro-6000")
MI300X = get_hardware("mi300x")
MI325X = get_hardware("mi325x")
MI355X = get_hardware("mi355x")
