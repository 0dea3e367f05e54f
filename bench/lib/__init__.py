"""What the benchmark commands share: corpora, rankers, metrics, agent and client harnesses, and their tables' rows.

Nothing here imports a command (`bench.<command>`) or an experiment (`bench.experiments`).
"""
