"""keel for Harbor: the installed agent (``KeelAgent``) and an environment over a local
scratch directory (``LocalEnvironment``) for machines without a container runtime."""

from keel_harbor.agent import KeelAgent

__all__ = ["KeelAgent"]
