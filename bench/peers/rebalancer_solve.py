"""Run Meta's Rebalancer on one instance; runs in bench/peers/.venv-rebalancer (Python 3.12).

    .venv-rebalancer/bin/python rebalancer_solve.py INSTANCE.json RESULT.json

Reads the instance bench/peers/rebalancer.py writes (nodes with rack, capacity share weight,
bytes free for partitions and whether they are emptied; partitions with size and nodes),
states it in Rebalancer's terms and writes the assignment it finds. No trimtab import: this
file runs in the peer's own venv.

Rebalancer's configuration (the fair one we could state; see README.md):
- objects = replicas (``topic/partition#k``), containers = nodes, scope ``rack``;
- partition ``partition``: the replicas of one partition form a group;
- constraints (hard goals), policy DEFAULT (the one that fixes what the initial
  assignment breaks; ``policy`` in the instance may name another): at most one replica of
  a group per node and per rack (GroupCountSpec, bound MAX, limit ABSOLUTE 1, on the
  container scope and on ``rack``), the disk limit (CapacitySpec on ``disk``: object size
  against the bytes free under the soft limit), emptied nodes emptied (ToFreeSpec);
- goals in strict priority (goal tuples): first BalanceSpec (formula LINEAR) on
  ``replicas`` (each replica 1, each node its capacity: utilisation = replicas/capacity,
  the capacity-proportional share),
  then MinimizeMovementSpec on ``replicas`` (the number of moved replicas);
- solver: local search with single moves (``moves`` in the instance may add others, such as
  ``swap``), a time cap (``time_cap_s``), seed 0.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from rebalancer import ProblemSolver

# The binding takes the ConstraintPolicy enum as its Thrift integer (a name is refused with
# '"" is not a valid int'); 0 is refused as "Unhandled ConstraintPolicy". Read off the
# problem each one builds: 1 keeps "no worse" as a constraint and adds a fix-it goal, 2 adds
# no fix-it goal, 3 adds the goal without the constraint.
MOVES = ("single",)  # swaps found nothing more and cost 15× the time (README.md)
POLICIES = {"DEFAULT": 1, "HARD": 2, "SOFT": 3}


def solve(instance: dict) -> dict:  # type: ignore[type-arg]
    nodes, parts = instance["nodes"], instance["partitions"]
    assignment: dict[str, list[str]] = {n["id"]: [] for n in nodes}
    groups: dict[str, list[str]] = {}
    sizes: dict[str, float] = {}
    for p in parts:
        objects = [f"{p['key']}#{k}" for k in range(len(p["nodes"]))]
        groups[p["key"]] = objects
        for obj, node in zip(objects, p["nodes"], strict=True):
            assignment[node].append(obj)
            sizes[obj] = float(p["size"])
    s = ProblemSolver(service_name="trimtab-bench", service_scope="peers")
    s.set_object_name("replica").set_container_name("node")
    s.set_assignment(assignment)
    s.add_partition("partition", groups)
    s.add_scope("rack", {n["id"]: n["rack"] for n in nodes})
    s.add_object_dimension("replicas", dict.fromkeys(sizes, 1.0))
    s.add_container_dimension("replicas", {n["id"]: float(n["capacity"]) for n in nodes})
    s.add_object_dimension("disk", sizes)
    s.add_container_dimension("disk", {n["id"]: float(n["disk_free"]) for n in nodes})
    policy = POLICIES[instance.get("policy", "DEFAULT")]
    one = {"type": 0, "globalLimit": 1.0}  # 0 = ABSOLUTE: the binding takes enums as ints
    for scope in ("node", "rack"):
        spec = {"name": f"one-per-{scope}", "scope": scope, "partitionName": "partition"}
        s.add_constraint({"groupCountSpec": spec | {"limit": one}}, policy)
    disk = {"name": "disk", "scope": "node", "dimension": "disk"}
    s.add_constraint({"capacitySpec": disk}, policy)
    emptied = [n["id"] for n in nodes if n["emptied"]]
    if emptied:
        s.add_constraint({"toFreeSpec": {"name": "drain", "containers": emptied}}, policy)
    balance = {"name": "balance", "scope": "node", "dimension": "replicas"}
    s.add_goal({"balanceSpec": balance}, 1.0)  # formula LINEAR (the default)
    s.add_goal_boundary()
    moves = {"name": "moves", "scope": "node", "dimension": "replicas"}
    s.add_goal({"minimizeMovementSpec": moves}, 1.0)
    s.add_solver(
        {
            "localSearchSolverSpec": {
                "solveTime": int(instance["time_cap_s"]),
                "randomSeed": 0,
                "moveTypeList": [{f"{m}MoveTypeSpec": {}} for m in instance.get("moves", MOVES)],
            }
        }
    )
    began = time.perf_counter()
    solution = s.solve()
    seconds = time.perf_counter() - began
    placed: dict[str, list[str]] = {p["key"]: [] for p in parts}
    for obj, node in sorted(solution["assignment"].items()):
        placed[obj.rsplit("#", 1)[0]].append(node)
    reports = solution.get("solverSummaries") or [{}]
    return {
        "assignment": placed,
        "seconds": seconds,
        "end_reason": reports[-1].get("endReason", "?"),
    }


def main() -> None:
    instance = json.loads(Path(sys.argv[1]).read_text(encoding="utf-8"))
    Path(sys.argv[2]).write_text(json.dumps(solve(instance)), encoding="utf-8")


if __name__ == "__main__":
    main()
