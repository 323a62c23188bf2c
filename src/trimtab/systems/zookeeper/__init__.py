"""ZooKeeper: sessions, targets (``HOST:PORT[/chroot]``) and znode encodings, shared by the
BookKeeper registry and Pulsar's metadata readers."""

__all__: list[str] = []
