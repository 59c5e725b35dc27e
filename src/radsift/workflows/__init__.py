"""Workflows: the jobs that combine stages (adapt a model then build its index, train with the held-out
evaluator, run the benchmark, run the demo).

They sit above the index, training and evaluation so that none of those imports another upward;
the CLI calls them, and so can Python.
"""
