"""vsr-extproc: a multimodal semantic router that runs as an Envoy external processor."""

__version__ = "0.1.0"
