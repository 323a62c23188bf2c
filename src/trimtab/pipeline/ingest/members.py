"""The key and membership rules: ``bad_bundle``, ``unknown_cluster``, ``unknown_node``.

Why a module of its own
    A row's cluster and node must be in the accepted inventory. The verdict depends only on
    a row's key, so it is decided per key (on the summary's few thousand rows, or per row
    for a small table) with the inventory written into the plan as literals, and applied to
    the rows where no row-local rule refused them first. A blank ``cluster`` where the
    contract allows it is the inventory's only cluster.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from trimtab.pipeline.ingest.keys import all_present, other_keys, refuse
from trimtab.pipeline.rules import Sql, blank, key_verdict, key_verdict_sql, q, text
from trimtab.pipeline.schemas import InputTable

__all__ = [
    "Members",
    "default_cluster",
    "member_verdict",
    "refuse_unknown",
    "unknown_members",
    "verdict_columns",
    "verdict_keys",
    "with_verdict",
]


#: The accepted inventory's nodes per cluster, what the membership rules look rows up in.
Members = Mapping[str, Sequence[str]]


def _member_keys(frame: DataFrame) -> list[str]:
    """The columns naming a row's cluster and node (``node`` or ``broker``) if it has one."""
    node = next((c for c in ("node", "broker") if c in frame.columns), None)
    return ["cluster"] if node is None else ["cluster", node]


def default_cluster(rows: DataFrame, table: InputTable, clusters: Sequence[str]) -> DataFrame:
    """A blank ``cluster`` where the contract allows it is the inventory's only cluster; with
    several, it stays ``""`` and :func:`unknown_members` refuses it."""
    optional = any(c.name == "cluster" and not c.required for c in table.columns)
    if not optional or not clusters:
        return rows
    only = text(clusters[0] if len(clusters) == 1 else "")
    missing = blank("`cluster`")
    return rows.withColumn("cluster", F.expr(f"CASE WHEN {missing} THEN {only} ELSE `cluster` END"))


def verdict_keys(unknown: DataFrame) -> list[str]:
    return [c for c in unknown.columns if not c.startswith("_member")]


def unknown_members(
    summary: DataFrame, members: Members | None, table: InputTable | None = None
) -> DataFrame | None:
    """The summary's keys refused by a key rule (``bad_bundle``, from the contract) or a
    membership rule (``unknown_cluster``, ``unknown_node``: the cluster or node is missing
    from the accepted inventory), with the first rule broken and its reason; None without
    ``members`` (when checking the inventory itself).

    The summary holds one row per key, so this is a lookup for a few thousand rows however
    many samples there are: no telemetry row pays for a lookup or a pattern match.
    """
    if members is None:
        return None
    keys = verdict_columns(summary, table)
    groups = summary.where(all_present(keys)).select(*keys).distinct()
    return with_verdict(groups, members, table).where(F.col("_member_rule").isNotNull())


def verdict_columns(summary: DataFrame, table: InputTable | None) -> list[str]:
    """The key columns the key and membership rules read."""
    if table is not None and key_verdict(table) is not None:
        return other_keys(table)  # a key rule reads key columns the membership ones do not
    return _member_keys(summary)


def with_verdict(summary: DataFrame, members: Members, table: InputTable | None) -> DataFrame:
    """``summary`` with ``_member_rule`` and ``_member_reason``: the first key or membership
    rule its key breaks (null where none does, or where a key column is null)."""
    keys = verdict_columns(summary, table)
    found = key_verdict_sql(table) if table is not None else []
    rules = [f"WHEN {cond} THEN {text(name)}" for name, cond, _ in found]
    reasons = [f"WHEN {cond} THEN {why}" for _, cond, why in found]
    clusters = list(members)
    listed = ", ".join(text(c) for c in clusters)
    outside = f"NOT (`cluster` IN ({listed}))" if clusters else "true"
    rules.append(f"WHEN {outside} THEN 'unknown_cluster'")
    several = f"no cluster given and the inventory has {len(clusters)} clusters"
    reasons.append(f"WHEN `cluster` = '' THEN {text(several)}")
    reasons.append(
        f"WHEN {outside} THEN format_string('cluster %s is not in the inventory', `cluster`)"
    )
    node = next((k for k in ("node", "broker") if k in keys), None)
    if node is not None:
        unknown = f"NOT ({_known_node(members, node)})"
        rules.append(f"WHEN {unknown} THEN 'unknown_node'")
        missing = text(f"{node} %s is not a node of cluster %s")
        reasons.append(f"WHEN {unknown} THEN format_string({missing}, {q(node)}, `cluster`)")
    present = all_present(keys)
    return summary.selectExpr(
        *(q(c) for c in summary.columns),
        f"CASE WHEN {present} THEN CASE {' '.join(rules)} END END AS `_member_rule`",
        f"CASE WHEN {present} THEN CASE {' '.join(reasons)} END END AS `_member_reason`",
    )


def _known_node(members: Members, node: str) -> Sql:
    """Whether column ``node`` names a node of the row's cluster in ``members``, as literals
    per cluster: a lookup in the plan itself (``IN`` becomes a hash set), where a join with
    the inventory cost a Spark job to broadcast it."""
    branches = " ".join(
        f"WHEN {text(cluster)} THEN {q(node)} IN ({', '.join(text(n) for n in names)})"
        for cluster, names in members.items()
    )
    return f"CASE `cluster` {branches} ELSE false END" if members else "false"


def refuse_unknown(rows: DataFrame, unknown: DataFrame, table: InputTable) -> DataFrame:
    """``rows`` with the key or membership rule applied where no row-local rule refused the
    row first; ``_unknown`` marks the rows it refused."""
    joined = rows.join(F.broadcast(unknown), verdict_keys(unknown), "left")
    return member_verdict(joined, table)


def member_verdict(rows: DataFrame, table: InputTable) -> DataFrame:
    """``rows`` carrying ``_member_rule``/``_member_reason`` (see :func:`with_verdict`) with
    that rule applied where no row-local rule refused the row first (``_unknown`` marks the
    rows it refused), without those two columns."""
    hit = "`_rule` IS NULL AND `_member_rule` IS NOT NULL"
    refused = refuse(
        rows.withColumn("_unknown", F.expr(hit)),
        "_unknown",
        "`_member_rule`",
        "`_member_reason`",
        table,
    )
    return refused.drop("_member_rule", "_member_reason")
