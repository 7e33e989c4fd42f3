"""PageRank over the file graph: personalised (local push) for a query, global for the repo map (pure)."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable

Neighbours = Callable[[int], dict[int, float]]
ALPHA = 0.15
"""Probability of jumping back to a seed; higher keeps the rank closer to the seeds."""


def personalised_pagerank(
    seeds: dict[int, float], neighbours: Neighbours, epsilon: float = 1e-3, max_pushes: int = 2_000
) -> dict[int, float]:
    """Approximate PageRank personalised to `seeds` by residual pushing (Andersen, Chung, Lang 2006).

    Only the part of the graph the rank mass reaches is visited, so the cost follows the seeds'
    neighbourhood, not the size of the repository.
    """
    total = sum(seeds.values())
    if total <= 0:
        return {}
    residual = {node: weight / total for node, weight in seeds.items() if weight > 0}
    rank: dict[int, float] = {}
    links: dict[int, tuple[dict[int, float], float]] = {}
    queue = deque(residual)
    pushes = 0
    while queue and pushes < max_pushes:
        node = queue.popleft()
        mass = residual.get(node, 0.0)
        if mass < epsilon:
            continue
        pushes += 1
        if node not in links:
            out = neighbours(node)
            links[node] = (out, sum(out.values()))
        out, degree = links[node]
        residual[node] = 0.0
        if degree <= 0:
            rank[node] = rank.get(node, 0.0) + mass
            continue
        rank[node] = rank.get(node, 0.0) + ALPHA * mass
        spread = (1 - ALPHA) * mass / degree
        for other, weight in out.items():
            before = residual.get(other, 0.0)
            after = before + spread * weight
            residual[other] = after
            if before < epsilon <= after:
                queue.append(other)
    return rank


def global_pagerank(nodes: Iterable[int], neighbours: Neighbours, iterations: int = 12) -> dict[int, float]:
    """Plain PageRank by power iteration: how central each file is to the whole repository."""
    links = {node: neighbours(node) for node in nodes}
    if not links:
        return {}
    degree = {node: sum(out.values()) for node, out in links.items()}
    rank = dict.fromkeys(links, 1 / len(links))
    for _ in range(iterations):
        nxt = dict.fromkeys(links, ALPHA / len(links))
        dangling = 0.0
        for node, out in links.items():
            if degree[node] <= 0:
                dangling += rank[node]
                continue
            share = (1 - ALPHA) * rank[node] / degree[node]
            for other, weight in out.items():
                if other in nxt:
                    nxt[other] += share * weight
        spread = (1 - ALPHA) * dangling / len(links)
        rank = {node: value + spread for node, value in nxt.items()}
    return rank
