"""Precision recommendations: ``IntegratedQuantizationEngine`` (the original
description's ``from roofline.quantization_integration import ...``).

A thin wrapper over ``roofline.recommend()``, the document of
``roofline recommend --json``.
"""

from types import SimpleNamespace

from . import _roofline as _core
from .hardware_registry import Hardware, get_hardware


class Recommendation:
    """The recommendation: ``config.strategy_name``, ``predicted_speedup``,
    ``attention``, ... ; ``to_dict()`` is the whole document."""

    def __init__(self, data):
        self.data = data
        self.strategy = data["strategy"]
        self.attention = data["attention"]
        self.flash_attention = data["attention"]
        self.predicted_speedup = data["predicted_speedup"]
        self.time_s = data["time_s"]
        self.baseline_time_s = data["baseline_time_s"]
        self.memory_saving = data["memory_saving"]
        self.quality_loss_pct = data["quality_loss_pct"]
        self.rationale = data["rationale"]
        self.alternatives = data["alternatives"]
        self.config = SimpleNamespace(strategy_name=self.strategy, attention=self.attention)

    def to_dict(self):
        return self.data

    def __repr__(self):
        return (f"Recommendation({self.strategy!r}, {self.predicted_speedup:.2f}x, "
                f"attention={self.attention!r})")


class IntegratedQuantizationEngine:
    """Recommends a precision strategy and attention kernel for a model on a device."""

    def __init__(self, hardware, max_quality_loss=3.0):
        self.hardware = hardware if isinstance(hardware, Hardware) else get_hardware(hardware)
        self.max_quality_loss = max_quality_loss

    def recommend(self, model_config, phase="decode", seq_len=4096, batch=1, max_quality_loss=None,
                  **kwargs):
        """``model_config``: a preset id, a path, the short form dict ({"H", "L", "nh",
        "nkv", "dh", "dff"}) or a config.json dict. Other keywords as roofline.recommend()."""
        if max_quality_loss is None:
            max_quality_loss = self.max_quality_loss
        data = _core.recommend(model_config, self.hardware.id, phase=phase, seq_len=seq_len,
                               batch=batch, max_quality_loss=max_quality_loss, **kwargs)
        return Recommendation(data)
