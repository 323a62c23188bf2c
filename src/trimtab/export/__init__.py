"""Plan writers in the formats the real tools take; import from the submodules."""

__all__: list[str] = []
