"""The Kafka APIs the stand-in serves, each a function from a decoded request to a response.

Requests and responses are kafka-python's own message classes, generated from Kafka's message
schemas (``kafka/protocol/schemas/resources/*.json``); nothing here frames bytes. Error codes
are upstream's (``org.apache.kafka.common.protocol.Errors``): 3 UNKNOWN_TOPIC_OR_PARTITION, 35
UNSUPPORTED_VERSION, 39 INVALID_REPLICA_ASSIGNMENT, 40 INVALID_CONFIG, 85
NO_REASSIGNMENT_IN_PROGRESS.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kafka.protocol.admin import (
    AlterPartitionReassignmentsRequest,
    AlterPartitionReassignmentsResponse,
    AlterReplicaLogDirsRequest,
    AlterReplicaLogDirsResponse,
    DescribeClusterRequest,
    DescribeClusterResponse,
    DescribeConfigsRequest,
    DescribeConfigsResponse,
    DescribeLogDirsRequest,
    DescribeLogDirsResponse,
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsResponse,
    ListPartitionReassignmentsRequest,
    ListPartitionReassignmentsResponse,
)
from kafka.protocol.metadata import (
    ApiVersionsRequest,
    ApiVersionsResponse,
    MetadataRequest,
    MetadataResponse,
)
from kafka.protocol.sasl import (
    SaslAuthenticateRequest,
    SaslAuthenticateResponse,
    SaslHandshakeRequest,
    SaslHandshakeResponse,
)

from tests.standins.kafka.cluster import NO_RATE, Cluster, ReassignError

__all__ = ["API", "MAX_VERSIONS", "Handler", "api_versions"]

Handler = Callable[[Cluster, int, Any], dict[str, Any]]
BROKER, TOPIC = 4, 2  # ConfigResource.Type
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3  # AlterConfigOp.OpType
DYNAMIC_TOPIC, DYNAMIC_BROKER, DEFAULT = 1, 2, 5  # ConfigSource


def api_versions(_c: Cluster, _b: int, _req: Any) -> dict[str, Any]:
    key_cls = ApiVersionsResponse.ApiVersion
    keys = [
        key_cls(api_key=k, min_version=0, max_version=v) for k, v in sorted(MAX_VERSIONS.items())
    ]
    return {"error_code": 0, "api_keys": keys, "throttle_time_ms": 0}


_META: dict[tuple[str, int], tuple[tuple[Any, ...], Any]] = {}  # the last answer per partition


def _partition_meta(c: Cluster, p: Any) -> Any:
    """One partition's Metadata entry, built again only when its state changed: a 10,000-
    partition topic answers in the time of its encoding."""
    offline = tuple(r for r in p.replicas if not c._alive(r))
    state = (id(c), p.epoch, p.leader, tuple(p.replicas), tuple(p.isr), offline)
    cached = _META.get((p.topic, p.index))
    if cached is not None and cached[0] == state:
        return cached[1]
    entry = MetadataResponse.MetadataResponseTopic.MetadataResponsePartition(
        error_code=0 if p.leader >= 0 else 5,  # LEADER_NOT_AVAILABLE
        partition_index=p.index,
        leader_id=p.leader,
        leader_epoch=p.epoch,
        replica_nodes=list(p.replicas),
        isr_nodes=list(p.isr),
        offline_replicas=list(offline),
    )
    _META[(p.topic, p.index)] = (state, entry)
    return entry


def metadata(c: Cluster, _b: int, req: Any) -> dict[str, Any]:
    mk_broker = MetadataResponse.MetadataResponseBroker
    mk_topic = MetadataResponse.MetadataResponseTopic
    with c.lock:
        c.tick()
        names = list(c.topics) if req.topics is None else [t.name for t in req.topics]
        brokers = [
            mk_broker(node_id=b.id, host=b.host, port=b.port, rack=b.rack) for b in c.live_brokers()
        ]
        topics = []
        for name in names:
            if name not in c.topics:
                topics.append(mk_topic(error_code=3, name=name, is_internal=False, partitions=[]))
                continue
            parts = [_partition_meta(c, c.partitions[(name, i)]) for i in c.topics[name]]
            topics.append(mk_topic(error_code=0, name=name, is_internal=False, partitions=parts))
        return {
            "throttle_time_ms": 0,
            "brokers": brokers,
            "cluster_id": c.cluster_id,
            "controller_id": c.controller(),
            "topics": topics,
        }


def describe_cluster(c: Cluster, _b: int, _req: Any) -> dict[str, Any]:
    mk_broker = DescribeClusterResponse.DescribeClusterBroker
    brokers = [
        mk_broker(broker_id=b.id, host=b.host, port=b.port, rack=b.rack, is_fenced=False)
        for b in c.live_brokers()
    ]
    return {
        "throttle_time_ms": 0,
        "error_code": 0,
        "error_message": None,
        "cluster_id": c.cluster_id,
        "controller_id": c.controller(),
        "brokers": brokers,
    }


def alter_reassignments(c: Cluster, _b: int, req: Any) -> dict[str, Any]:
    mk_topic = AlterPartitionReassignmentsResponse.ReassignableTopicResponse
    mk_part = mk_topic.ReassignablePartitionResponse
    out = []
    for topic in req.topics:
        parts = []
        for part in topic.partitions:
            replicas = None if part.replicas is None else list(part.replicas)
            code, message = 0, None
            try:
                c.reassign(topic.name, part.partition_index, replicas)
            except ReassignError as exc:
                code, message = exc.code, exc.message
            parts.append(
                mk_part(
                    partition_index=part.partition_index, error_code=code, error_message=message
                )
            )
        out.append(mk_topic(name=topic.name, partitions=parts))
    c.write_log.append(("AlterPartitionReassignments", len(out)))
    return {"throttle_time_ms": 0, "error_code": 0, "error_message": None, "responses": out}


def list_reassignments(c: Cluster, _b: int, req: Any) -> dict[str, Any]:
    mk_topic = ListPartitionReassignmentsResponse.OngoingTopicReassignment
    mk_part = mk_topic.OngoingPartitionReassignment
    wanted = None
    if req.topics is not None:
        wanted = [(t.name, i) for t in req.topics for i in t.partition_indexes]
    by_topic: dict[str, list[Any]] = {}
    for p in c.ongoing(wanted):
        by_topic.setdefault(p.topic, []).append(
            mk_part(
                partition_index=p.index,
                replicas=list(p.replicas),
                adding_replicas=p.adding,
                removing_replicas=p.removing,
            )
        )
    topics = [mk_topic(name=name, partitions=parts) for name, parts in by_topic.items()]
    return {"throttle_time_ms": 0, "error_code": 0, "error_message": None, "topics": topics}


def describe_log_dirs(c: Cluster, broker_id: int, req: Any) -> dict[str, Any]:
    """One result per log dir of the broker, with the replicas in it, and a future replica
    (``is_future_key``) in the dir an AlterReplicaLogDirs is copying it to."""
    mk_result = DescribeLogDirsResponse.DescribeLogDirsResult
    mk_topic = mk_result.DescribeLogDirsTopic
    mk_part = mk_topic.DescribeLogDirsPartition
    with c.lock:
        c.tick()
        broker = c.brokers[broker_id]
        if req.topics is None:
            keys = list(c.partitions)
        else:
            named = [(t.topic, i) for t in req.topics for i in t.partitions]
            keys = [k for k in named if k in c.partitions]
        in_dir: dict[str, dict[str, list[Any]]] = {d: {} for d in broker.dirs}
        used = dict.fromkeys(broker.dirs, 0)
        for key in keys:
            p = c.partitions[key]
            if broker_id not in p.replicas:
                continue
            size = int(p.copied.get(broker_id, p.size)) if broker_id in p.adding else p.size
            home = c.dir_of(p, broker_id)
            used[home] = used.get(home, 0) + size
            in_dir.setdefault(home, {}).setdefault(p.topic, []).append(
                mk_part(
                    partition_index=p.index,
                    partition_size=size,
                    offset_lag=p.size - size,
                    is_future_key=False,
                )
            )
            if broker_id in p.future:
                there, copied = p.future[broker_id]
                used[there] = used.get(there, 0) + int(copied)
                in_dir.setdefault(there, {}).setdefault(p.topic, []).append(
                    mk_part(
                        partition_index=p.index,
                        partition_size=int(copied),
                        offset_lag=p.size - int(copied),
                        is_future_key=True,
                    )
                )
        share = broker.disk_total // len(broker.dirs)
        results = [
            mk_result(
                error_code=0,
                log_dir=d,
                topics=[mk_topic(name=t, partitions=ps) for t, ps in topics.items()],
                total_bytes=share,
                usable_bytes=max(0, share - used.get(d, 0)),
                is_cordoned=broker.cordoned and d == broker.dirs[0],
            )
            for d, topics in in_dir.items()
        ]
        return {"throttle_time_ms": 0, "error_code": 0, "results": results}


def alter_replica_log_dirs(c: Cluster, broker_id: int, req: Any) -> dict[str, Any]:
    """AlterReplicaLogDirs (API 34) on one broker: per replica, upstream's error code."""
    mk_topic = AlterReplicaLogDirsResponse.AlterReplicaLogDirTopicResult
    mk_part = mk_topic.AlterReplicaLogDirPartitionResult
    out: dict[str, list[Any]] = {}
    for d in req.dirs:
        for topic in d.topics:
            for index in topic.partitions:
                code = c.alter_log_dir(broker_id, d.path, topic.name, index)
                out.setdefault(topic.name, []).append(
                    mk_part(partition_index=index, error_code=code)
                )
    c.write_log.append(("AlterReplicaLogDirs", sum(len(v) for v in out.values())))
    results = [mk_topic(topic_name=t, partitions=ps) for t, ps in out.items()]
    return {"throttle_time_ms": 0, "results": results}


def _resource_error(c: Cluster, rtype: int, name: str) -> tuple[int, str | None]:
    if rtype == TOPIC and name not in c.topics:
        return 3, f"Topic {name} does not exist."
    if rtype == BROKER and name != "" and not (name.isdigit() and int(name) in c.brokers):
        return 42, f"Broker {name} does not exist."  # INVALID_REQUEST
    if rtype not in (TOPIC, BROKER):
        return 42, f"Unsupported resource type {rtype}."
    return 0, None


def describe_configs(c: Cluster, _b: int, req: Any) -> dict[str, Any]:
    mk_result = DescribeConfigsResponse.DescribeConfigsResult
    mk_entry = mk_result.DescribeConfigsResourceResult
    results = []
    with c.lock:
        for res in req.resources:
            code, message = _resource_error(c, res.resource_type, res.resource_name)
            entries = []
            if code == 0:
                stored = c.configs[(res.resource_type, res.resource_name)]
                keys = res.configuration_keys
                names = list(c.config_keys(res.resource_type)) if keys is None else list(keys)
                dynamic = DYNAMIC_BROKER if res.resource_type == BROKER else DYNAMIC_TOPIC
                for name in names:
                    if name not in c.config_keys(res.resource_type):
                        continue
                    is_set = name in stored
                    default = str(NO_RATE) if name.endswith((".rate", ".per.second")) else ""
                    entries.append(
                        mk_entry(
                            name=name,
                            value=stored[name] if is_set else default,
                            read_only=False,
                            config_source=dynamic if is_set else DEFAULT,
                            is_default=not is_set,
                            is_sensitive=False,
                            synonyms=[],
                            config_type=0,
                            documentation=None,
                        )
                    )
            results.append(
                mk_result(
                    error_code=code,
                    error_message=message,
                    resource_type=res.resource_type,
                    resource_name=res.resource_name,
                    configs=entries,
                )
            )
    return {"throttle_time_ms": 0, "results": results}


def _check_value(name: str, value: str | None) -> str | None:
    """Why ``value`` is invalid for ``name`` (None when it is valid)."""
    if value is None:
        return f"Null value not supported for {name}"
    if name.endswith((".rate", ".per.second", ".ms")):
        if not value.lstrip("-").isdigit() or int(value) < 0:
            return f"Invalid value {value} for configuration {name}: Value must be at least 0"
    elif name.endswith(".throttled.replicas") and value not in ("", "*"):
        for item in value.split(","):
            part, _, broker = item.strip().partition(":")
            if not (part.isdigit() and broker.isdigit()):
                return (
                    f"Invalid value {value} for configuration {name}: must be the literal '*' "
                    "or a list of replicas in the following format: "
                    "[partitionId]:[brokerId],[partitionId]:[brokerId],..."
                )
    return None


def _apply(current: dict[str, str], name: str, op: int, value: str | None) -> str | None:
    """Apply one IncrementalAlterConfigs op to ``current``; the error message, if any."""
    if op == DELETE:
        current.pop(name, None)
        return None
    if op in (APPEND, SUBTRACT):
        if not name.endswith(".throttled.replicas"):
            return f"Config value append is not allowed for config key: {name}"
        have = [s for s in current.get(name, "").split(",") if s]
        more = [s.strip() for s in (value or "").split(",") if s.strip()]
        new = (
            have + [s for s in more if s not in have]
            if op == APPEND
            else [s for s in have if s not in more]
        )
        value = ",".join(new)
    problem = _check_value(name, value)
    if problem:
        return problem
    assert value is not None
    current[name] = value
    return None


def incremental_alter_configs(c: Cluster, _b: int, req: Any) -> dict[str, Any]:
    mk_result = IncrementalAlterConfigsResponse.AlterConfigsResourceResponse
    out = []
    with c.lock:
        for res in req.resources:
            code, message = _resource_error(c, res.resource_type, res.resource_name)
            if code == 0:
                trial = dict(c.configs[(res.resource_type, res.resource_name)])
                for cfg in res.configs:
                    if cfg.name not in c.config_keys(res.resource_type):
                        code, message = 40, f"Unknown config key {cfg.name}"
                        break
                    problem = _apply(trial, cfg.name, cfg.config_operation, cfg.value)
                    if problem:
                        code, message = 40, problem
                        break
                if code == 0 and not req.validate_only:
                    c.tick()  # copies so far ran at the old rate
                    c.configs[(res.resource_type, res.resource_name)] = trial
                    c.write_log.append(("IncrementalAlterConfigs", (res.resource_name, trial)))
            out.append(
                mk_result(
                    error_code=code,
                    error_message=message,
                    resource_type=res.resource_type,
                    resource_name=res.resource_name,
                )
            )
    return {"throttle_time_ms": 0, "responses": out}


#: API key -> (request class, response class, handler); SASL is the server's own business.
_ALTER = (AlterPartitionReassignmentsRequest, AlterPartitionReassignmentsResponse)
_ALTER_CONFIGS = (IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse)
API: dict[int, tuple[Any, Any, Handler | None]] = {
    18: (ApiVersionsRequest, ApiVersionsResponse, api_versions),
    3: (MetadataRequest, MetadataResponse, metadata),
    60: (DescribeClusterRequest, DescribeClusterResponse, describe_cluster),
    45: (*_ALTER, alter_reassignments),
    46: (ListPartitionReassignmentsRequest, ListPartitionReassignmentsResponse, list_reassignments),
    35: (DescribeLogDirsRequest, DescribeLogDirsResponse, describe_log_dirs),
    34: (AlterReplicaLogDirsRequest, AlterReplicaLogDirsResponse, alter_replica_log_dirs),
    32: (DescribeConfigsRequest, DescribeConfigsResponse, describe_configs),
    44: (*_ALTER_CONFIGS, incremental_alter_configs),
    17: (SaslHandshakeRequest, SaslHandshakeResponse, None),
    36: (SaslAuthenticateRequest, SaslAuthenticateResponse, None),
}

#: What the stand-in advertises in ApiVersions: kafka-python's newest version of each.
MAX_VERSIONS: dict[int, int] = {key: int(api[0].max_version) for key, api in API.items()}
