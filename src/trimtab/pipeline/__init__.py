"""The fleet pipeline: Spark reads telemetry, the engines decide, outputs are written atomically.

Only :mod:`trimtab.pipeline.generate` is importable without Spark.
"""

__all__: list[str] = []
