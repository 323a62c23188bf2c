"""A stand-in BookKeeper cluster for the docs' examples: a real ZooKeeper (Debian's), stand-in
bookies (trimtab's BookKeeper v3 server, answering GET_BOOKIE_INFO with a fixed disk each)
registered the way a bookie registers, Pulsar's ``/bookies`` rack map, and optionally Pulsar
brokers' load reports under ``/loadbalance/brokers``. Run it as
``python -m tests.standins.bookkeeper``.
"""
