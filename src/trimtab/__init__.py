"""trimtab: placement and load balancing for mixed-hardware log-storage clusters."""

__version__ = "0.1.0"

__all__ = ["__version__"]
