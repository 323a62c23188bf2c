"""Apache Pulsar: load reports, the follow loop's watcher, the ``/bookies`` rack map,
namespace isolation policies and pulsar-admin commands."""

__all__: list[str] = []
