"""A simulated KRaft cluster on disk (broker log dirs + metadata log) with known anomalies and its ground truth."""

from pipelines.simulate.generate import GenerationResult, OutputNotEmpty, generate, summarize
from pipelines.simulate.scenario import Scenario, build_scenario
from pipelines.simulate.spec import ANOMALIES, PRESETS, ClusterSpec
from pipelines.simulate.truth import Truth, TruthItem, load_truth

__all__ = [
    "ANOMALIES",
    "PRESETS",
    "ClusterSpec",
    "GenerationResult",
    "OutputNotEmpty",
    "Scenario",
    "Truth",
    "TruthItem",
    "build_scenario",
    "generate",
    "load_truth",
    "summarize",
]
