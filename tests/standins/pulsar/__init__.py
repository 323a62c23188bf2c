"""A stand-in for Pulsar's admin REST API, built from upstream's resource classes (no Pulsar
broker can be installed here): :mod:`.cluster` (the state, faults and call counts),
:mod:`.server` (one HTTP(S) server per broker), :mod:`.standin` (the cluster of servers),
:mod:`.fixtures` (the pytest fixture) and ``python -m tests.standins.pulsar`` (a process).
"""
